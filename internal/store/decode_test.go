package store

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/guregu/dynamo/v2"
)

// TestHandDecoders holds each hand-written UnmarshalDynamoItem to
// guregu/dynamo's reflection decoder: an item with every field set (and
// one with every field zero) is encoded by guregu, then decoded both ways.
// A field added to the struct but not to its decoder comes back zero and
// fails here.
func TestHandDecoders(t *testing.T) {
	t.Run("memberItem", func(t *testing.T) { checkHandDecoder[memberItem, memberItemByReflection](t) })
	t.Run("ticketItem", func(t *testing.T) { checkHandDecoder[ticketItem, ticketItemByReflection](t) })

	t.Run("ErrWrongType", func(t *testing.T) {
		item, err := dynamo.MarshalItem(map[string]any{"type": "MEMBER", "version": "seven"})
		if err != nil {
			t.Fatal(err)
		}
		var m memberItem
		if err := dynamo.UnmarshalItem(item, &m); err == nil || !strings.Contains(err.Error(), `"version"`) {
			t.Errorf("a string version decoded: err %v", err)
		}
	})
}

// The same structs without the method: guregu decodes them by reflection.
type (
	memberItemByReflection memberItem
	ticketItemByReflection ticketItem
)

func checkHandDecoder[H any, R any](t *testing.T) {
	t.Helper()
	var full R
	fill(t, reflect.ValueOf(&full).Elem())
	for name, in := range map[string]R{"every field set": full, "every field zero": *new(R)} {
		item, err := dynamo.MarshalItem(in)
		if err != nil {
			t.Fatal(err)
		}
		var byHand H
		if err := dynamo.UnmarshalItem(item, &byHand); err != nil {
			t.Fatalf("%s: by hand: %v", name, err)
		}
		var byReflection R
		if err := dynamo.UnmarshalItem(item, &byReflection); err != nil {
			t.Fatalf("%s: by reflection: %v", name, err)
		}
		got := reflect.ValueOf(byHand).Convert(reflect.TypeFor[R]()).Interface()
		if !reflect.DeepEqual(got, byReflection) {
			t.Errorf("%s:\nby hand       %+v\nby reflection %+v", name, got, byReflection)
		}
		if name == "every field set" && !reflect.DeepEqual(got, in) {
			t.Errorf("%s: a field did not round-trip:\nin  %+v\nout %+v", name, in, got)
		}
	}
}

// fill sets every field of v to a distinct non-zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Date(2026, 12, 2, 3, 4, 5, 600+i, time.UTC)))
		case f.Kind() == reflect.String:
			f.SetString("v-" + name)
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(int64(10 + i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{"a-" + name, "b-" + name}))
		default:
			t.Fatalf("fill: field %s of type %s: teach fill its kind", name, f.Type())
		}
	}
}
