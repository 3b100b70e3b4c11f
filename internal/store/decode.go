package store

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"
)

// The items every hot read decodes by the page (member edges: AP1, AP2,
// AP3; tickets: every ticket listing) decode by hand instead of by
// guregu/dynamo's reflection, which cost AP1 about 150 allocations and 8%
// of the store's CPU on a page of 25 (BenchmarkStoreVsRaw). guregu calls
// UnmarshalDynamoItem in place of its own decoder; TestHandDecoders holds
// each to the reflection decoder on an item with every field set, so a
// field added to the struct and not here fails a test.

var (
	_ dynamo.ItemUnmarshaler = (*memberItem)(nil)
	_ dynamo.ItemUnmarshaler = (*ticketItem)(nil)
)

// UnmarshalDynamoItem decodes a member edge.
func (it *memberItem) UnmarshalDynamoItem(item dynamo.Item) error {
	d := attrs{item: item}
	*it = memberItem{PK: d.s("pk"), SK: d.s("sk"), Type: d.s("type"), GSI1PK: d.s("gsi1pk"), GSI1SK: d.s("gsi1sk"),
		OrgID: d.s("orgId"), TeamID: d.s("teamId"), UserID: d.s("userId"), Role: d.s("role"), Version: d.n("version"),
		JoinedAt: d.t("joinedAt"), UpdatedAt: d.t("updatedAt")}
	return d.err
}

// UnmarshalDynamoItem decodes a ticket's #METADATA item.
func (it *ticketItem) UnmarshalDynamoItem(item dynamo.Item) error {
	d := attrs{item: item}
	*it = ticketItem{PK: d.s("pk"), SK: d.s("sk"), Type: d.s("type"),
		GSI1PK: d.s("gsi1pk"), GSI1SK: d.s("gsi1sk"), GSI2PK: d.s("gsi2pk"), GSI2SK: d.s("gsi2sk"),
		GSI3PK: d.s("gsi3pk"), GSI3SK: d.s("gsi3sk"), GSI4PK: d.s("gsi4pk"), GSI4SK: d.s("gsi4sk"),
		GSI5PK: d.s("gsi5pk"), GSI5SK: d.s("gsi5sk"), GSI6PK: d.s("gsi6pk"), GSI6SK: d.s("gsi6sk"),
		GSI7PK: d.s("gsi7pk"), GSI7SK: d.s("gsi7sk"),
		OrgID: d.s("orgId"), ID: d.s("ticketId"), Title: d.s("title"), Description: d.s("description"),
		Status: d.s("status"), Priority: d.s("priority"), RequesterID: d.s("requesterId"), AssigneeID: d.s("assigneeId"),
		TeamID: d.s("teamId"), Tags: d.list("tags"), CommentCount: int(d.n("commentCount")), Version: d.n("version"),
		CreatedAt: d.t("createdAt"), UpdatedAt: d.t("updatedAt"), Deleting: d.b("deleting"), LeaseOwner: d.s("leaseOwner")}
	return d.err
}

// attrs reads one item's attributes as guregu/dynamo encodes them, keeping
// the first error. An absent attribute is the zero value, as with guregu.
type attrs struct {
	item dynamo.Item
	err  error
}

func (d *attrs) fail(name string, av types.AttributeValue, want string) {
	if d.err == nil {
		d.err = fmt.Errorf("decode %s: attribute %q is %T, want %s", d.s("type"), name, av, want)
	}
}

func (d *attrs) s(name string) string {
	switch v := d.item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	default:
		d.fail(name, v, "a string")
		return ""
	}
}

func (d *attrs) n(name string) int64 {
	switch v := d.item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return 0
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("decode %q: %w", name, err)
		}
		return n
	default:
		d.fail(name, v, "a number")
		return 0
	}
}

func (d *attrs) b(name string) bool {
	switch v := d.item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return false
	case *types.AttributeValueMemberBOOL:
		return v.Value
	default:
		d.fail(name, v, "a boolean")
		return false
	}
}

func (d *attrs) t(name string) time.Time {
	var t time.Time
	if s := d.s(name); s != "" {
		if err := t.UnmarshalText([]byte(s)); err != nil && d.err == nil {
			d.err = fmt.Errorf("decode %q: %w", name, err)
		}
	}
	return t
}

func (d *attrs) list(name string) []string {
	switch v := d.item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberL:
		out := make([]string, len(v.Value))
		for i, e := range v.Value {
			s, ok := e.(*types.AttributeValueMemberS)
			if !ok {
				d.fail(name, e, "a list of strings")
				return nil
			}
			out[i] = s.Value
		}
		return out
	default:
		d.fail(name, v, "a list")
		return nil
	}
}
