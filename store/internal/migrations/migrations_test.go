package migrations

import (
	"reflect"
	"testing"
	"testing/fstest"
)

func TestList(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    []Migration
		wantErr string
	}{
		{"empty", fstest.MapFS{}, []Migration{}, ""},
		{"ordered by version", fstest.MapFS{
			"m/0010_later.sql":      file("B"),
			"m/0002_add_index.sql":  file("A"),
			"m/README.md":           file("not sql"),
			"other/0001_other.sql":  file("elsewhere"),
			"m/0001_init_space.sql": file("CREATE"),
		}, []Migration{
			{Version: 1, Name: "init_space", File: "0001_init_space", SQL: "CREATE"},
			{Version: 2, Name: "add_index", File: "0002_add_index", SQL: "A"},
			{Version: 10, Name: "later", File: "0010_later", SQL: "B"},
		}, ""},
		{"no underscore", fstest.MapFS{"m/0001.sql": file("")}, nil, `bad migration name "m/0001.sql"`},
		{"not a number", fstest.MapFS{"m/one_init.sql": file("")}, nil, `bad migration name "m/one_init.sql"`},
		{"zero", fstest.MapFS{"m/0000_init.sql": file("")}, nil, `bad migration name "m/0000_init.sql"`},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file(""), "m/1_b.sql": file("")}, nil, "duplicate migration version 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := List(tc.files, "m")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("List error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("List = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
