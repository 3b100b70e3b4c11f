package httpapi

import (
	"strconv"
	"testing"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/testkit"
)

// TestKindStatusesAgree: the statuses the domain table tests name their
// subtests by (testkit.Statuses) are the ones the error handler answers,
// kind by kind.
func TestKindStatusesAgree(t *testing.T) {
	for k := errs.Internal; k <= errs.TooManyRequests; k++ {
		if got, want := testkit.Statuses[k], strconv.Itoa(kindStatus[k]); got != want {
			t.Errorf("%v: testkit says %q, the error handler answers %s", k, got, want)
		}
	}
	if len(testkit.Statuses) != len(kindStatus) {
		t.Errorf("testkit.Statuses has %d kinds, the error handler %d", len(testkit.Statuses), len(kindStatus))
	}
}
