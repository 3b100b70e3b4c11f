package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

	// Odd items, which the store never writes: the answer is guregu's,
	// value or error, and never a crash.
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	odd := map[string]dynamo.Item{
		"a number for the type":    {"type": n("1"), "version": n("2")},
		"a string for the version": {"type": str("MEMBER"), "version": str("seven")},
		"a time as unix seconds":   {"type": str("TICKET"), "createdAt": n("1764000000")},
		"an empty time":            {"type": str("TICKET"), "updatedAt": str("")},
		"a malformed time":         {"type": str("TICKET"), "updatedAt": str("yesterday")},
		"tags as a string set":     {"type": str("TICKET"), "tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}},
		"a number among the tags":  {"type": str("TICKET"), "tags": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1")}}},
		"a version too large":      {"type": str("MEMBER"), "version": n("99999999999999999999")},
		"a string for deleting":    {"type": str("TICKET"), "deleting": str("yes")},
	}
	for name, item := range odd {
		t.Run("odd/"+name, func(t *testing.T) {
			sameAsReflection[memberItem, memberItemByReflection](t, item)
			sameAsReflection[ticketItem, ticketItemByReflection](t, item)
		})
	}
}

// sameAsReflection decodes item both ways: the same value, or both fail.
func sameAsReflection[H any, R any](t *testing.T, item dynamo.Item) {
	t.Helper()
	var byHand H
	herr := dynamo.UnmarshalItem(item, &byHand)
	var byReflection R
	rerr := dynamo.UnmarshalItem(item, &byReflection)
	if (herr == nil) != (rerr == nil) {
		t.Fatalf("%T: by hand err %v, by reflection err %v", byHand, herr, rerr)
	}
	if got := reflect.ValueOf(byHand).Convert(reflect.TypeFor[R]()).Interface(); herr == nil && !reflect.DeepEqual(got, byReflection) {
		t.Errorf("%T:\nby hand       %+v\nby reflection %+v", byHand, got, byReflection)
	}
}

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
func fill(t testing.TB, v reflect.Value) {
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

// fullItem is an item with every field of R set, as guregu encodes it.
func fullItem[R any](tb testing.TB) dynamo.Item {
	tb.Helper()
	var full R
	fill(tb, reflect.ValueOf(&full).Elem())
	item, err := dynamo.MarshalItem(full)
	if err != nil {
		tb.Fatal(err)
	}
	return item
}

// TestHandDecodersPayRent holds the hand decoders to their reason to
// exist: decoding an item by hand allocates less than guregu's reflection
// decoder (allocation counts, not timings, so the test does not depend on
// the machine's speed). BenchmarkDecode measures the gain in time.
func TestHandDecodersPayRent(t *testing.T) {
	check := func(name string, hand, reflection func()) {
		h, r := testing.AllocsPerRun(100, hand), testing.AllocsPerRun(100, reflection)
		if h >= r {
			t.Errorf("%s: %v allocations by hand, %v by reflection: the hand decoder gains nothing", name, h, r)
		}
	}
	member, tk := fullItem[memberItemByReflection](t), fullItem[ticketItemByReflection](t)
	check("memberItem", func() { var x memberItem; _ = dynamo.UnmarshalItem(member, &x) },
		func() { var x memberItemByReflection; _ = dynamo.UnmarshalItem(member, &x) })
	check("ticketItem", func() { var x ticketItem; _ = dynamo.UnmarshalItem(tk, &x) },
		func() { var x ticketItemByReflection; _ = dynamo.UnmarshalItem(tk, &x) })
}

// BenchmarkDecode is one item decoded by hand and by guregu's reflection
// (the speed mechanism's row in BENCHMARKS.md).
func BenchmarkDecode(b *testing.B) {
	member, tk := fullItem[memberItemByReflection](b), fullItem[ticketItemByReflection](b)
	b.Run("memberItem/hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x memberItem
			_ = dynamo.UnmarshalItem(member, &x)
		}
	})
	b.Run("memberItem/reflection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x memberItemByReflection
			_ = dynamo.UnmarshalItem(member, &x)
		}
	})
	b.Run("ticketItem/hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x ticketItem
			_ = dynamo.UnmarshalItem(tk, &x)
		}
	})
	b.Run("ticketItem/reflection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x ticketItemByReflection
			_ = dynamo.UnmarshalItem(tk, &x)
		}
	})
}
