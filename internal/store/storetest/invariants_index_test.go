package storetest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/store"
)

// TestInvariantsIndexRule checks the index rules on made-up scans: DynamoDB keeps
// its indexes itself, so no raw write can make an index disagree with the
// base table, and the rule is tested on what a disagreeing scan would
// return.
func TestInvariantsIndexRule(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	base := []attrs{
		{"pk": s("A"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("Y")},   // indexed as it is
		{"pk": s("B"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("Y")},   // not in the index
		{"pk": s("C"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("new")}, // the index has stale keys
		{"pk": s("D"), "sk": s("1"), "gsi1pk": s("X")},                     // half its keys: not indexed
		{"pk": s("F"), "sk": s("1")},                                       // no keys: not indexed
	}
	entries := []attrs{
		{"pk": s("A"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("Y")},
		{"pk": s("C"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("old")},
		{"pk": s("E"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("Y")}, // no base item
		{"pk": s("A"), "sk": s("1"), "gsi1pk": s("X"), "gsi1sk": s("Y")}, // twice
	}
	c := newChecker(CheckOptions{}, base)
	c.checkIndex(store.Schema.Indexes[0], entries)
	want := map[string]string{
		"C": RuleGSIUnexplained,
		"E": RuleGSIUnexplained,
		"A": RuleGSIUnexplained,
		"B": RuleGSIMissing,
	}
	if len(c.out) != len(want) {
		t.Fatalf("got %d violations %v, want %d", len(c.out), c.out, len(want))
	}
	for _, v := range c.out {
		if want[v.PK] != v.Rule || v.SK != "1" {
			t.Errorf("unexpected %s", v)
		}
		delete(want, v.PK)
	}
	if len(want) > 0 {
		t.Errorf("missing violations: %v", want)
	}
}
