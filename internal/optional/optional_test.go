package optional_test

import (
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/optional"
)

func TestOf(t *testing.T) {
	if optional.Of("") != nil || optional.Of(0) != nil || optional.Of(time.Time{}) != nil || optional.Of(time.Time{}.UTC()) != nil {
		t.Error("a zero value: want nil")
	}
	now := time.Now()
	if p := optional.Of("x"); p == nil || *p != "x" {
		t.Errorf("Of(x) = %v", p)
	}
	if p := optional.Of(now); p == nil || !p.Equal(now) {
		t.Errorf("Of(now) = %v", p)
	}
}

func TestSet(t *testing.T) {
	v := "kept"
	optional.Set(&v, nil)
	if v != "kept" {
		t.Errorf("nil changed it: %q", v)
	}
	optional.Set(&v, optional.Of("set"))
	if v != "set" {
		t.Errorf("got %q", v)
	}
}
