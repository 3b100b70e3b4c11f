package dynamotest

import (
	"context"
	"fmt"
	"strings"
	"sync"

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
// at initialization, so SDK retries do not add entries.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// Middleware is the smithy API option that feeds the recorder.
func (r *Recorder) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("dynamotest.Recorder",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			r.add(describe(middleware.GetOperationName(ctx), in.Parameters))
			return next.HandleInitialize(ctx, in)
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

func (r *Recorder) add(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = nil
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
