package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/store"
)

// rowWriter writes exported rows in one format.
type rowWriter interface {
	Write(r *client.Row) error
	// Flush writes what is buffered; the export is complete after it.
	Flush() error
}

// newRowWriter returns the writer of format ("csv" or "jsonl") on w.
func newRowWriter(format string, w io.Writer) (rowWriter, error) {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader); err != nil {
			return nil, err
		}
		return &csvWriter{w: cw}, nil
	case "jsonl":
		return &jsonlWriter{w: bufio.NewWriter(w)}, nil
	}
	return nil, fmt.Errorf("unknown format %q (want csv or jsonl)", format)
}

// csvHeader names the CSV columns: the wire row's fields, payload as
// JSON.
var csvHeader = []string{"seq", "ts", "actor", "op", "type", "entityId", "payload"}

// csvWriter writes one CSV record per row.
type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) Write(r *client.Row) error {
	return c.w.Write([]string{
		strconv.FormatInt(r.Seq, 10), r.TS.UTC().Format(store.TimeLayout), r.Actor, r.Op, r.Type, r.EntityID, string(r.Payload),
	})
}

func (c *csvWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// jsonlWriter writes each row as the line the API sends it as.
type jsonlWriter struct{ w *bufio.Writer }

func (j *jsonlWriter) Write(r *client.Row) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := j.w.Write(b); err != nil {
		return err
	}
	return j.w.WriteByte('\n')
}

func (j *jsonlWriter) Flush() error { return j.w.Flush() }
