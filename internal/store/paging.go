package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/page"
)

var errCursor = errs.InvalidParam("cursor", "invalid_cursor", "the cursor is malformed or does not belong to this listing")

// indexKey is the key attributes of idx ("" = the base table).
func indexKey(idx string) (pk, sk string) {
	for _, ix := range Schema.Indexes {
		if ix.Name == idx {
			return ix.PK, ix.SK
		}
	}
	return attrPK, attrSK
}

// keyAttrs are the attributes of a LastEvaluatedKey on idx.
func keyAttrs(idx string) []string {
	if pk, sk := indexKey(idx); pk != attrPK {
		return []string{attrPK, attrSK, pk, sk}
	}
	return []string{attrPK, attrSK}
}

// listing is one paginated Query: an index ("" = the table), a partition,
// and a sort key prefix every start key must carry; op names it in errors.
type listing struct {
	op        string
	index     string
	partition string
	prefix    string
	desc      bool
}

// query runs l for one page of limit (checked by the caller), asking for
// one item more, so a next page is known without an empty last page.
func (d *DB) query(ctx context.Context, l listing, limit int, after string) ([]dynamo.Item, string, error) {
	pk, sk := indexKey(l.index)
	q := d.table.Get(pk, l.partition)
	if l.prefix != "" {
		q = q.Range(sk, dynamo.BeginsWith, l.prefix)
	}
	if l.index != "" {
		q = q.Index(l.index)
	}
	if l.desc {
		q = q.Order(dynamo.Descending)
	}
	if after != "" {
		start, err := decodeStart(after, l)
		if err != nil {
			return nil, "", err
		}
		q = q.StartFrom(start)
	}
	items, err := allItems(ctx, q.Limit(limit+1), limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("query: %w", translate(err))
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	next, err := encodeStart(items[len(items)-1], l.index)
	return items, next, err
}

// positions is the start key after each item (page.Result.After).
func positions(items []dynamo.Item, idx string) ([]string, error) {
	out := make([]string, len(items))
	for i, it := range items {
		var err error
		if out[i], err = encodeStart(it, idx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func encodeStart(item dynamo.Item, idx string) (string, error) {
	m := map[string]string{}
	for _, a := range keyAttrs(idx) {
		s, ok := item[a].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("paging: item lacks key attribute %s", a)
		}
		m[a] = s.Value
	}
	return encodeCursor(m), nil // map keys are marshalled sorted: deterministic
}

// encodeCursor is v (of strings: it always marshals) as JSON in base64.
func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads into v a cursor of encodeCursor's, reporting success.
func decodeCursor(s string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && json.Unmarshal(b, v) == nil
}

// decodeStart parses a start key and proves it lies inside the listing (its
// key attributes, partition and prefix): another is refused, never followed.
func decodeStart(s string, l listing) (dynamo.PagingKey, error) {
	var m map[string]string
	if !decodeCursor(s, &m) {
		return nil, errCursor
	}
	want := keyAttrs(l.index)
	slices.Sort(want)
	pk, sk := indexKey(l.index)
	if !slices.Equal(slices.Sorted(maps.Keys(m)), want) || m[pk] != l.partition || !strings.HasPrefix(m[sk], l.prefix) {
		return nil, errCursor
	}
	key := dynamo.PagingKey{}
	for k, v := range m {
		key[k] = &types.AttributeValueMemberS{Value: v}
	}
	return key, nil
}

// entityType reads an item's type discriminator.
func entityType(item dynamo.Item) string { return attrS(item, "type") }

// fail wraps err (if any) with the listing's name (if it has one).
func (l listing) fail(err error) error {
	if err == nil || l.op == "" {
		return err
	}
	return fmt.Errorf("%s: %w", l.op, err)
}

// list runs one page of l and converts its items, all of entity type I,
// after checks (as getItem's).
func list[I any, T any](ctx context.Context, d *DB, l listing, p page.Request, conv func(I) T, checks ...error) (page.Result[T], error) {
	if err := checkIDs(checks...); err != nil {
		return page.Result[T]{}, err
	}
	p, err := p.Check()
	if err != nil {
		return page.Result[T]{}, l.fail(err)
	}
	items, next, err := d.query(ctx, l, p.Limit, p.After)
	if err != nil {
		return page.Result[T]{}, l.fail(err)
	}
	// An item under deletion (a large team or ticket) is gone for readers.
	live := items[:0]
	for _, it := range items {
		if it["deleting"] == nil {
			live = append(live, it)
		}
	}
	out, err := unmarshalAll(live, conv)
	if err != nil {
		return page.Result[T]{}, l.fail(err)
	}
	after, err := positions(live, l.index)
	return page.Result[T]{Items: out, Next: next, After: after}, l.fail(err)
}

// unmarshalAll decodes items of one entity type into one slice, converting
// each with conv.
func unmarshalAll[I any, T any](items []dynamo.Item, conv func(I) T) ([]T, error) {
	decoded := make([]I, len(items))
	out := make([]T, len(items))
	for i, it := range items {
		if err := dynamo.UnmarshalItem(it, &decoded[i]); err != nil {
			return nil, fmt.Errorf("unmarshal %s: %w", entityType(it), err)
		}
		out[i] = conv(decoded[i])
	}
	return out, nil
}

// allItems runs q to its end as raw items, sized for n.
func allItems(ctx context.Context, q *dynamo.Query, n int) ([]dynamo.Item, error) {
	items := make([]dynamo.Item, 0, n)
	it := q.Iter()
	var item dynamo.Item
	for it.Next(ctx, &item) {
		items = append(items, item)
	}
	return items, it.Err()
}

// withChildren reads a parent and its first limit children in one Query of
// its partition (#METADATA sorts first): notFound if the parent is gone or
// being deleted; checks as list's.
func withChildren[PI, CI, P, C any](ctx context.Context, d *DB, partition, parentType string, limit int, notFound error, op string,
	parent func(PI) P, child func(CI) C, checks ...error) (P, []C, error) {
	var none P
	if err := checkIDs(checks...); err != nil {
		return none, nil, err
	}
	items, _, err := d.query(ctx, listing{partition: partition}, limit+1, "")
	if err != nil {
		return none, nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(items) == 0 || entityType(items[0]) != parentType || items[0]["deleting"] != nil {
		return none, nil, notFound
	}
	var pi PI
	if err := dynamo.UnmarshalItem(items[0], &pi); err != nil {
		return none, nil, fmt.Errorf("%s: %w", op, err)
	}
	children, err := unmarshalAll(items[1:], child)
	if err != nil {
		return none, nil, fmt.Errorf("%s: %w", op, err)
	}
	return parent(pi), children, nil
}
