// Package migrations lists a driver's embedded, numbered schema
// migrations: files named NNNN_name.sql in one directory, in version
// order. Applying them (and the SQL in them) stays in the drivers.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered .sql file.
type Migration struct {
	// Version is the file's number: 1 for 0001_init.sql.
	Version int
	// Name is the part after the number: init for 0001_init.sql.
	Name string
	// File is the file name without .sql: 0001_init for 0001_init.sql.
	File string
	// SQL is the file's content.
	SQL string
}

// List returns the .sql files in dir of fsys as migrations ordered by
// version. A file whose name is not a positive number, an underscore and
// a name, or whose version another file has, is an error.
func List(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	for _, p := range names {
		m, err := read(fsys, p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("duplicate migration version %d", out[i].Version)
		}
	}
	return out, nil
}

// read parses the name of the migration file at p and reads it.
func read(fsys fs.FS, p string) (Migration, error) {
	file := strings.TrimSuffix(path.Base(p), ".sql")
	num, name, ok := strings.Cut(file, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v <= 0 {
		return Migration{}, fmt.Errorf("bad migration name %q", p)
	}
	body, err := fs.ReadFile(fsys, p)
	if err != nil {
		return Migration{}, err
	}
	return Migration{Version: v, Name: name, File: file, SQL: string(body)}, nil
}
