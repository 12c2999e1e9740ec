package engine

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/eddy-run/eddy/store"
)

// encodePosition makes the opaque "next" of a delivery page.
func encodePosition(p store.DeliveryPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Seq, 10) + ":" + p.ID))
}

// decodePosition reads a "next" back ("" is the start).
func decodePosition(s string) (store.DeliveryPosition, error) {
	if s == "" {
		return store.DeliveryPosition{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.DeliveryPosition{}, err
	}
	seq, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 0 || id == "" {
		return store.DeliveryPosition{}, strconv.ErrSyntax
	}
	return store.DeliveryPosition{Seq: n, ID: id}, nil
}
