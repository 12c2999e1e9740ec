package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/store"
)

func testRawDefinitions(t *testing.T, open OpenFunc) {
	st := open(t)
	put := func(kind, name, def string) bool {
		t.Helper()
		created, err := st.DefinitionPut(ctx0, "s", kind, store.Definition{Name: name, Def: []byte(def), UpdatedAt: ts(1)})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	if !put(store.DefFunction, "f", `{"kind":"expr"}`) || put(store.DefFunction, "f", `{"kind":"expr","code":"nil"}`) {
		t.Fatal("created flags wrong: want true then false")
	}
	put(store.DefFunction, "a", `{}`)
	put(store.DefTrigger, "f", `{"function":"f"}`) // same name, other kind
	got, err := st.DefinitionGet(ctx0, "s", store.DefFunction, "f")
	if err != nil || string(got.Def) != `{"kind":"expr","code":"nil"}` || !got.UpdatedAt.Equal(ts(1)) {
		t.Fatalf("get = %+v, %v", got, err)
	}
	list, err := st.DefinitionList(ctx0, "s", store.DefFunction)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "f" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if other, _ := st.DefinitionList(ctx0, "other", store.DefFunction); len(other) != 0 {
		t.Fatalf("another space sees %+v", other)
	}
	if err := st.DefinitionDelete(ctx0, "s", store.DefFunction, "f"); err != nil {
		t.Fatal(err)
	}
	if err := st.DefinitionDelete(ctx0, "s", store.DefFunction, "f"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := st.DefinitionGet(ctx0, "s", store.DefFunction, "f"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	if _, err := st.DefinitionGet(ctx0, "s", store.DefTrigger, "f"); err != nil {
		t.Fatalf("the trigger of the same name went too: %v", err)
	}
}

func testRawSecrets(t *testing.T, open OpenFunc) {
	st := open(t)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	for i := range got {
		wg.Go(func() {
			v, err := st.Secret(ctx0, "k", func() ([]byte, error) { return []byte{byte(i), 1, 2}, nil })
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	for i := range got {
		if len(got[i]) != 3 || !bytes.Equal(got[i], got[0]) {
			t.Fatalf("secrets disagree: %v", got)
		}
	}
	boom := errors.New("boom")
	if _, err := st.Secret(ctx0, "other", func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("generator error: %v", err)
	}
}
