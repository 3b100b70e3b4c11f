package store

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"
)

// Member edges and tickets, decoded by the page on hot reads, decode by hand:
// guregu/dynamo's reflection cost AP1 about 150 allocations on a page of 25
// (BenchmarkStoreVsRaw). An item with a shape the store does not write goes
// to guregu whole (TestHandDecoders). A ticket's decoder is in ticket.go.

var (
	_ dynamo.ItemUnmarshaler = (*memberItem)(nil)
	_ dynamo.ItemUnmarshaler = (*ticketItem)(nil)
)

// The same structs without the method: guregu decodes them by reflection.
type (
	memberItemByReflection memberItem
	ticketItemByReflection ticketItem
)

// UnmarshalDynamoItem decodes a member edge.
func (it *memberItem) UnmarshalDynamoItem(item dynamo.Item) error {
	d := attrs{item: item}
	m := memberItem{PK: d.s("pk"), SK: d.s("sk"), Type: d.s("type"), GSI1PK: d.s("gsi1pk"), GSI1SK: d.s("gsi1sk"),
		OrgID: d.s("orgId"), TeamID: d.s("teamId"), UserID: d.s("userId"), Role: d.s("role"), Version: d.n("version"),
		JoinedAt: d.t("joinedAt"), UpdatedAt: d.t("updatedAt")}
	if d.odd {
		return dynamo.UnmarshalItem(item, (*memberItemByReflection)(it))
	}
	*it = m
	return nil
}

// attrs reads one item's attributes in the shapes the store writes. An
// absent (or NULL) attribute is the zero value, as with guregu; any other
// shape marks the item odd, for guregu to decode.
type attrs struct {
	item dynamo.Item
	odd  bool
}

// get returns the attribute name if it has the shape V, ok false when it is
// absent or NULL, or of another shape (then the item is odd).
func get[V types.AttributeValue](d *attrs, name string) (v V, ok bool) {
	switch a := d.item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
	case V:
		return a, true
	default:
		d.odd = true
	}
	return v, false
}

func (d *attrs) s(name string) string {
	if v, ok := get[*types.AttributeValueMemberS](d, name); ok {
		return v.Value
	}
	return ""
}

func (d *attrs) n(name string) int64 {
	v, ok := get[*types.AttributeValueMemberN](d, name)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		d.odd = true
	}
	return n
}

func (d *attrs) b(name string) bool {
	v, ok := get[*types.AttributeValueMemberBOOL](d, name)
	return ok && v.Value
}

func (d *attrs) t(name string) time.Time {
	var t time.Time
	if v, ok := get[*types.AttributeValueMemberS](d, name); ok && t.UnmarshalText([]byte(v.Value)) != nil {
		d.odd = true
	}
	return t
}

func (d *attrs) list(name string) []string {
	v, ok := get[*types.AttributeValueMemberL](d, name)
	if !ok {
		return nil
	}
	out := make([]string, len(v.Value))
	for i, e := range v.Value {
		s, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			d.odd = true
			return nil
		}
		out[i] = s.Value
	}
	return out
}
