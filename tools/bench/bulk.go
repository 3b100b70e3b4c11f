package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/tenantd/tenantd/internal/store"
)

// The bench seeds fast without knowing the store's items or keys: it calls
// the store's exported write methods on a *capturing* client whose requests
// never leave the process, takes the items those methods would have written
// (the Puts of their transactions), and writes them with BatchWriteItem, 25
// at a time, from a pool of writers. Counter updates (ADD memberCount 1 per
// AddTeamMember) are coalesced per item and applied once at the end with their
// sum. Condition checks are dropped: the generated data set is consistent
// by construction.

type captureKey struct{}

// captured is what one store call would have sent.
type captured struct{ params []any }

// captureMiddleware short-circuits every call made with a captured in its
// context: the input is kept and an empty output returned.
func captureMiddleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("bench.capture",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			box, ok := ctx.Value(captureKey{}).(*captured)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			box.params = append(box.params, in.Parameters)
			var out any
			switch in.Parameters.(type) {
			case *dynamodb.TransactWriteItemsInput:
				out = &dynamodb.TransactWriteItemsOutput{}
			case *dynamodb.PutItemInput:
				out = &dynamodb.PutItemOutput{}
			case *dynamodb.UpdateItemInput:
				out = &dynamodb.UpdateItemOutput{}
			case *dynamodb.GetItemInput:
				out = &dynamodb.GetItemOutput{}
			case *dynamodb.QueryInput:
				out = &dynamodb.QueryOutput{}
			case *dynamodb.BatchGetItemInput:
				out = &dynamodb.BatchGetItemOutput{}
			default:
				return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("bench capture: unexpected %T", in.Parameters)
			}
			return middleware.InitializeOutput{Result: out}, middleware.Metadata{}, nil
		}), middleware.Before)
}

// bulk is the fast writer.
type bulk struct {
	client  *dynamodb.Client
	table   string
	items   chan map[string]types.AttributeValue
	wg      sync.WaitGroup
	written atomic.Int64
	batches atomic.Int64
	retries atomic.Int64

	mu      sync.Mutex
	err     error
	counter map[string]*counterUpdate
	other   []*dynamodb.UpdateItemInput
}

type counterUpdate struct {
	in   *dynamodb.UpdateItemInput
	sums map[string]int64           // placeholder -> summed N
	sets map[string]map[string]bool // placeholder -> united SS
}

func newBulk(client *dynamodb.Client, table string, writers int) *bulk {
	b := &bulk{client: client, table: table, items: make(chan map[string]types.AttributeValue, 4096),
		counter: map[string]*counterUpdate{}}
	for range writers {
		b.wg.Add(1)
		go b.writer()
	}
	return b
}

func (b *bulk) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
}

func (b *bulk) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *bulk) writer() {
	defer b.wg.Done()
	batch := make([]types.WriteRequest, 0, 25)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := b.write(batch); err != nil {
			b.fail(err)
		}
		b.written.Add(int64(len(batch)))
		b.batches.Add(1)
		batch = batch[:0]
	}
	for it := range b.items {
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		if len(batch) == 25 {
			flush()
		}
	}
	flush()
}

func (b *bulk) write(reqs []types.WriteRequest) error {
	pending := map[string][]types.WriteRequest{b.table: append([]types.WriteRequest(nil), reqs...)}
	for try := 0; ; try++ {
		out, err := b.client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return fmt.Errorf("batch write: %w", err)
		}
		if len(out.UnprocessedItems[b.table]) == 0 {
			return nil
		}
		if try > 50 {
			return errors.New("batch write: unprocessed items keep coming back")
		}
		b.retries.Add(1)
		pending = out.UnprocessedItems
		time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
	}
}

// do runs one store write method against the capturing DB and routes what
// it would have written.
func (b *bulk) do(write func(ctx context.Context) error) error {
	_, err := b.doPuts(write, nil)
	return err
}

// doPuts is do that also returns the items written; keep, when set, drops
// the updates whose key it refuses.
func (b *bulk) doPuts(write func(ctx context.Context) error, keep func(key map[string]types.AttributeValue) bool) ([]map[string]types.AttributeValue, error) {
	box := &captured{}
	if err := write(context.WithValue(context.Background(), captureKey{}, box)); err != nil {
		return nil, err
	}
	var puts []map[string]types.AttributeValue
	for _, p := range box.params {
		switch in := p.(type) {
		case *dynamodb.TransactWriteItemsInput:
			for _, ti := range in.TransactItems {
				switch {
				case ti.Put != nil:
					if ty, ok := ti.Put.Item["type"].(*types.AttributeValueMemberS); ok && ty.Value == "AuditEvent" {
						continue // see seeder.ev
					}
					b.items <- ti.Put.Item
					puts = append(puts, ti.Put.Item)
				case ti.Update != nil:
					u := ti.Update
					if keep != nil && !keep(u.Key) {
						continue
					}
					b.update(&dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
						ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
						ExpressionAttributeValues: u.ExpressionAttributeValues})
				case ti.ConditionCheck != nil:
					// consistent by construction
				default:
					return nil, fmt.Errorf("bench bulk: unsupported transaction item %+v", ti)
				}
			}
		case *dynamodb.PutItemInput:
			b.items <- in.Item
			puts = append(puts, in.Item)
		case *dynamodb.UpdateItemInput:
			if keep == nil || keep(in.Key) {
				b.update(in)
			}
		}
	}
	return puts, b.failed()
}

// update coalesces ADD-only updates of one item (counters such as
// memberCount or edgeSeq are summed, string sets such as teamIds are
// united) into one, applied at close; anything else is kept to run as is.
func (b *bulk) update(in *dynamodb.UpdateItemInput) {
	b.mu.Lock()
	defer b.mu.Unlock()
	expr := strings.TrimSpace(aws.ToString(in.UpdateExpression))
	cond := aws.ToString(in.ConditionExpression)
	addOnly := strings.HasPrefix(expr, "ADD ") && !strings.Contains(expr, " SET ") && !strings.Contains(expr, " REMOVE ") &&
		!strings.Contains(expr, " DELETE ")
	mergeable := addOnly
	for k, v := range in.ExpressionAttributeValues {
		switch v.(type) {
		case *types.AttributeValueMemberN, *types.AttributeValueMemberSS:
		default:
			mergeable = false
		}
		if strings.Contains(cond, k) {
			mergeable = false
		}
	}
	if !mergeable {
		b.other = append(b.other, in)
		return
	}
	names := make([]string, 0, len(in.ExpressionAttributeNames))
	for k, v := range in.ExpressionAttributeNames {
		names = append(names, k+"="+v)
	}
	sort.Strings(names)
	id := keyString(in.Key) + "|" + expr + "|" + cond + "|" + strings.Join(names, ",")
	cu := b.counter[id]
	if cu == nil {
		cu = &counterUpdate{in: in, sums: map[string]int64{}, sets: map[string]map[string]bool{}}
		b.counter[id] = cu
	}
	for k, v := range in.ExpressionAttributeValues {
		switch x := v.(type) {
		case *types.AttributeValueMemberN:
			n, _ := strconv.ParseInt(x.Value, 10, 64)
			cu.sums[k] += n
		case *types.AttributeValueMemberSS:
			if cu.sets[k] == nil {
				cu.sets[k] = map[string]bool{}
			}
			for _, e := range x.Value {
				cu.sets[k][e] = true
			}
		}
	}
}

func keyString(k map[string]types.AttributeValue) string {
	names := make([]string, 0, len(k))
	for n := range k {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, n := range names {
		if s, ok := k[n].(*types.AttributeValueMemberS); ok {
			sb.WriteString(n + "=" + s.Value + ";")
		}
	}
	return sb.String()
}

// close writes what is queued, then the coalesced updates.
func (b *bulk) close(ctx context.Context) error {
	close(b.items)
	b.wg.Wait()
	if err := b.failed(); err != nil {
		return err
	}
	var ins []*dynamodb.UpdateItemInput
	for _, cu := range b.counter {
		in := *cu.in
		vals := map[string]types.AttributeValue{}
		for k, n := range cu.sums {
			vals[k] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
		}
		for k, set := range cu.sets {
			ss := make([]string, 0, len(set))
			for e := range set {
				ss = append(ss, e)
			}
			sort.Strings(ss)
			vals[k] = &types.AttributeValueMemberSS{Value: ss}
		}
		in.ExpressionAttributeValues = vals
		ins = append(ins, &in)
	}
	ins = append(ins, b.other...)
	return parallel(8, len(ins), func(i int) error {
		if _, err := b.client.UpdateItem(ctx, ins[i]); err != nil {
			return fmt.Errorf("update %s (%s): %w", keyString(ins[i].Key), aws.ToString(ins[i].UpdateExpression), err)
		}
		return nil
	})
}

// captureDB is a store.DB whose calls are captured (with a captureKey
// context) instead of sent.
func captureDB(real *dynamodb.Client, table string) *store.DB {
	c := dynamodb.New(real.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append([]func(*middleware.Stack) error{}, o.APIOptions...)
		o.APIOptions = append(o.APIOptions, captureMiddleware)
	})
	return store.Open(c, table)
}

// capture returns the DynamoDB inputs a store call makes, without sending
// them (the call's own result is ignored).
func capture(f func(ctx context.Context) error) []any {
	box := &captured{}
	_ = f(context.WithValue(context.Background(), captureKey{}, box))
	return box.params
}

// send replays one captured input on the real client (a shallow copy, so
// concurrent replays of one input do not share it with the SDK).
func send(ctx context.Context, c *dynamodb.Client, p any) error {
	var err error
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		cp := *in
		var out *dynamodb.GetItemOutput
		if out, err = c.GetItem(ctx, &cp); err == nil && out.Item == nil {
			err = fmt.Errorf("GetItem %s: no item", keyString(in.Key))
		}
	case *dynamodb.QueryInput:
		cp := *in
		var out *dynamodb.QueryOutput
		if out, err = c.Query(ctx, &cp); err == nil && len(out.Items) == 0 {
			err = errors.New("query returned no items")
		}
	case *dynamodb.BatchGetItemInput:
		cp := *in
		_, err = c.BatchGetItem(ctx, &cp)
	case *dynamodb.TransactWriteItemsInput:
		cp := *in
		_, err = c.TransactWriteItems(ctx, &cp)
	case *dynamodb.UpdateItemInput:
		cp := *in
		_, err = c.UpdateItem(ctx, &cp)
	case *dynamodb.PutItemInput:
		cp := *in
		_, err = c.PutItem(ctx, &cp)
	default:
		err = fmt.Errorf("send: unexpected %T", p)
	}
	return err
}

// sendAll replays inputs in order (as a request makes them).
func sendAll(ctx context.Context, c *dynamodb.Client, ps ...any) error {
	for _, p := range ps {
		if err := send(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// one returns the single input of a capture.
// listing is the Query of a captured listing: a capture answers it with
// no items, so the store also reads the listing's parent (an empty page
// tells a missing parent from an empty one), unless the listing is in the
// parent's own partition (its first page reads the parent in the same
// Query); a page with items, the load's case, is that one Query.
func listing(ps []any) any {
	if len(ps) != 1 && len(ps) != 2 {
		panic(fmt.Sprintf("bench: expected a listing's Query (and its parent's GetItem), captured %d calls", len(ps)))
	}
	if _, ok := ps[0].(*dynamodb.QueryInput); !ok {
		panic(fmt.Sprintf("bench: a listing's first call is %T, want a Query", ps[0]))
	}
	return ps[0]
}

func one(ps []any) any {
	if len(ps) != 1 {
		panic(fmt.Sprintf("bench: expected one DynamoDB call, captured %d", len(ps)))
	}
	return ps[0]
}
