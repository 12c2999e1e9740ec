package client

import (
	"cmp"
	"slices"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func sortOptimistic(os []Optimistic) {
	slices.SortFunc(os, func(a, b Optimistic) int {
		return cmp.Or(cmp.Compare(a.Record.Type, b.Record.Type), cmp.Compare(a.Record.ID, b.Record.ID))
	})
}
