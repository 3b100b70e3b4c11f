package dynamotest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Op is one DynamoDB API call as a test sees it.
type Op struct {
	Name       string // API operation, e.g. "GetItem"
	Index      string // IndexName of a Query/Scan, "" for the base table
	Consistent bool   // ConsistentRead was requested
	Descending bool   // a Query with ScanIndexForward=false
	Items      int    // keys of a BatchGetItem, items of a TransactWriteItems
	// Start and End bound the call, retries included: calls whose spans
	// overlap were in flight together (one round trip; see Trips).
	Start, End time.Time
}

func (o Op) String() string {
	s := o.Name
	if o.Index != "" {
		s += "(" + o.Index + ")"
	}
	if o.Consistent {
		s += "+consistent"
	}
	if o.Descending {
		s += "+desc"
	}
	return s
}

// Recorder collects the DynamoDB calls made through a client: attach
// Middleware to the client's APIOptions. Each logical call is recorded once,
// at initialization, so SDK retries do not add entries. A call whose
// context has ended before it starts is not recorded: the SDK sends
// nothing for it.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
	gen int // Resets so far: a call that began before one is not finished after
}

// Middleware is the smithy API option that feeds the recorder.
func (r *Recorder) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("dynamotest.Recorder",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if ctx.Err() != nil {
				return next.HandleInitialize(ctx, in) // fails without a request
			}
			op := describe(middleware.GetOperationName(ctx), in.Parameters)
			op.Start = time.Now()
			i, gen := r.add(op)
			out, md, err := next.HandleInitialize(ctx, in)
			r.finish(i, gen, time.Now())
			return out, md, err
		}), middleware.After)
}

func describe(name string, params any) Op {
	op := Op{Name: name}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		op.Consistent = aws.ToBool(in.ConsistentRead)
	case *dynamodb.QueryInput:
		op.Index = aws.ToString(in.IndexName)
		op.Consistent = aws.ToBool(in.ConsistentRead)
		op.Descending = in.ScanIndexForward != nil && !*in.ScanIndexForward
	case *dynamodb.ScanInput:
		op.Index = aws.ToString(in.IndexName)
	case *dynamodb.BatchGetItemInput:
		op.Consistent = len(in.RequestItems) > 0
		for _, ka := range in.RequestItems {
			op.Items += len(ka.Keys)
			op.Consistent = op.Consistent && aws.ToBool(ka.ConsistentRead)
		}
	case *dynamodb.TransactWriteItemsInput:
		op.Items = len(in.TransactItems)
	}
	return op
}

func (r *Recorder) add(op Op) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	return len(r.ops) - 1, r.gen
}

// finish sets the end of call i, unless a Reset forgot it meanwhile.
func (r *Recorder) finish(i, gen int, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen == r.gen && i < len(r.ops) && r.ops[i].End.IsZero() {
		r.ops[i].End = end
	}
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = nil
	r.gen++
}

// Trips renders the recorded calls as round trips, in order: a call that
// starts while another is in flight joins its round trip (written
// "A ‖ B", names sorted); a call that starts after every call before it
// has ended begins the next one, e.g.
// "BatchGetItem+consistent ‖ Query, BatchGetItem".
func (r *Recorder) Trips() string {
	ops := r.Ops()
	slices.SortStableFunc(ops, func(a, b Op) int { return a.Start.Compare(b.Start) })
	var trips []string
	var group []string
	var end time.Time
	flush := func() {
		slices.Sort(group)
		trips = append(trips, strings.Join(group, " ‖ "))
		group = nil
	}
	for _, o := range ops {
		oend := o.End
		if oend.IsZero() { // still in flight
			oend = time.Now()
		}
		if len(group) > 0 && !o.Start.Before(end) {
			flush()
		}
		group = append(group, o.String())
		if oend.After(end) {
			end = oend
		}
	}
	if len(group) > 0 {
		flush()
	}
	return strings.Join(trips, ", ")
}

// Ops returns a copy of what was recorded since the last Reset.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Names renders the recorded calls compactly, e.g. "GetItem+consistent, Query(GSI1)".
func (r *Recorder) Names() string {
	ops := r.Ops()
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// Count returns how many calls were recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

var _ fmt.Stringer = Op{}
