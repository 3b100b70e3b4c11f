package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/ids"
)

// AuditEventFromImage reads the audit event a stream record's new image
// holds, given its string attributes; ok is false for any other item.
// Both the local stream reader and the Lambda function decode with it.
func AuditEventFromImage(img map[string]string) (audit.Event, bool) {
	if img["type"] != typeAudit || !ids.ValidResource(img["orgId"]) || !ids.ValidResource(img["eventId"]) {
		return audit.Event{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, img["at"])
	if err != nil {
		return audit.Event{}, false
	}
	return fromAuditItem(auditItem{OrgID: img["orgId"], ID: img["eventId"], ActorID: img["actorId"], Action: img["action"],
		TargetType: img["targetType"], TargetID: img["targetId"], RequestID: img["requestId"],
		ClientRequestID: img["clientRequestId"], At: at.UTC(), Changes: img["changes"]}), true
}

// shardDone is the checkpoint of a shard read to its end (closed).
const shardDone = "closed"

type checkpointItem struct {
	PK   string `dynamo:"pk,hash"`
	SK   string `dynamo:"sk,range"`
	Type string `dynamo:"type"`
	Seq  string `dynamo:"seq"`
}

// StreamReader feeds the table's change stream to a dispatcher where no
// Lambda function does (DynamoDB Local, tests); every replica may run one.
// It reads ahead of the dispatcher (maxAhead), and checkpoints a shard
// once every batch up to one with an audit event is dispatched: a restart
// resumes there, no event is lost, and an idle service writes nothing.
type StreamReader struct {
	db       *DB
	streams  *dynamodbstreams.Client
	dispatch func(context.Context, audit.Event, func(error))
	log      *slog.Logger
	// Poll is how long the reader waits when the stream had nothing new.
	Poll time.Duration

	arn       string
	iters     map[string]string
	ahead     map[string][]*streamBatch // by shard: batches read and not yet checkpointed, oldest first
	done      map[string]bool
	described time.Time
	shards    []stypes.Shard
}

// maxAhead bounds the audit events read from a shard and not dispatched
// yet: far more than a burst of one org's, so the next org's are read
// while that burst is dispatched.
const maxAhead = 10_000

// streamBatch is one GetRecords' audit events on their way to the
// dispatcher (a batch without one is not kept).
type streamBatch struct {
	last string        // the sequence number of its last record
	left atomic.Int64  // events not dispatched yet
	done chan struct{} // closed when none is left
	mu   sync.Mutex
	err  error // the first dispatch that failed
}

// NewStreamReader returns a reader of d's table's stream through streams.
// dispatch is webhook.Dispatcher.Queue: it dispatches an event in its
// turn and calls done with the outcome.
func (d *DB) NewStreamReader(streams *dynamodbstreams.Client, dispatch func(ctx context.Context, ev audit.Event, done func(error)), log *slog.Logger) *StreamReader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &StreamReader{db: d, streams: streams, dispatch: dispatch, log: log, Poll: 250 * time.Millisecond,
		iters: map[string]string{}, ahead: map[string][]*streamBatch{}, done: map[string]bool{}}
}

// Run reads the stream until ctx is done.
func (r *StreamReader) Run(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := r.Once(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("webhook stream reader", "err", err)
		}
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(r.Poll):
			}
		}
	}
}

// Once reads what every open shard has, dispatching its audit events, and
// returns how many records it read.
func (r *StreamReader) Once(ctx context.Context) (int, error) {
	if err := r.describe(ctx); err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, sh := range r.shards {
		id := aws.ToString(sh.ShardId)
		if r.done[id] {
			continue
		}
		n, err := r.readShard(ctx, id)
		total += n
		if err != nil {
			delete(r.iters, id) // start again from the checkpoint
			delete(r.ahead, id)
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// describe finds the stream and its shards (again every few seconds, for
// new shards).
func (r *StreamReader) describe(ctx context.Context) error {
	if r.arn == "" {
		out, err := r.db.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.db.TableName())})
		if err != nil {
			return fmt.Errorf("describe table: %w", err)
		}
		if out.Table.LatestStreamArn == nil {
			return fmt.Errorf("table %s has no stream: run migrate", r.db.TableName())
		}
		r.arn = *out.Table.LatestStreamArn
	}
	if time.Since(r.described) < 5*time.Second && r.shards != nil {
		return nil
	}
	var shards []stypes.Shard
	var start *string
	for {
		out, err := r.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn), ExclusiveStartShardId: start})
		if err != nil {
			return fmt.Errorf("describe stream: %w", err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if start = out.StreamDescription.LastEvaluatedShardId; start == nil {
			break
		}
	}
	r.shards, r.described = shards, time.Now()
	return nil
}

// readShard queues the audit events of one shard from its iterator (or
// its checkpoint), batch by batch, for the dispatcher, and checkpoints the
// batches dispatched.
func (r *StreamReader) readShard(ctx context.Context, shardID string) (int, error) {
	it, ok := r.iters[shardID]
	if !ok {
		var cp checkpointItem
		err := r.db.table.Get(attrPK, streamCheckpointPK).Range(attrSK, dynamo.Equal, checkpointSK(shardID)).Consistent(true).One(ctx, &cp)
		if err != nil && !errors.Is(err, dynamo.ErrNotFound) {
			return 0, fmt.Errorf("read checkpoint: %w", err)
		}
		if cp.Seq == shardDone {
			r.done[shardID] = true
			return 0, nil
		}
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.arn), ShardId: aws.String(shardID),
			ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}
		if cp.Seq != "" {
			in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAfterSequenceNumber, aws.String(cp.Seq)
		}
		out, err := r.streams.GetShardIterator(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("shard iterator: %w", err)
		}
		it = aws.ToString(out.ShardIterator)
	}
	read := 0
	for range 10 {
		for r.undispatched(shardID) >= maxAhead {
			<-r.ahead[shardID][0].done
			if err := r.settle(ctx, shardID); err != nil {
				return read, err
			}
		}
		if err := r.settle(ctx, shardID); err != nil {
			return read, err
		}
		out, err := r.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(1000)})
		if err != nil {
			return read, fmt.Errorf("get records: %w", err)
		}
		if b := r.queue(ctx, out.Records); b != nil {
			r.ahead[shardID] = append(r.ahead[shardID], b)
		}
		read += len(out.Records)
		if out.NextShardIterator == nil { // the shard is closed and read to its end
			for _, b := range r.ahead[shardID] {
				<-b.done
			}
			if err := r.settle(ctx, shardID); err != nil {
				return read, err
			}
			r.done[shardID] = true
			delete(r.iters, shardID)
			return read, r.checkpoint(ctx, shardID, shardDone)
		}
		it = *out.NextShardIterator
		r.iters[shardID] = it
		if len(out.Records) == 0 {
			break
		}
	}
	return read, r.settle(ctx, shardID)
}

// undispatched is how many audit events read from the shard the
// dispatcher has not dispatched yet.
func (r *StreamReader) undispatched(shardID string) int {
	n := 0
	for _, b := range r.ahead[shardID] {
		n += int(b.left.Load())
	}
	return n
}

// queue hands the audit events of records to the dispatcher, as a batch
// to wait for (none when they hold none).
func (r *StreamReader) queue(ctx context.Context, records []stypes.Record) *streamBatch {
	b := &streamBatch{done: make(chan struct{})}
	var evs []audit.Event
	for _, rec := range records {
		if rec.Dynamodb == nil {
			continue
		}
		b.last = aws.ToString(rec.Dynamodb.SequenceNumber)
		if rec.EventName != stypes.OperationTypeInsert {
			continue
		}
		if ev, ok := AuditEventFromImage(streamStrings(rec.Dynamodb.NewImage)); ok {
			evs = append(evs, ev)
		}
	}
	if len(evs) == 0 {
		return nil
	}
	b.left.Store(int64(len(evs)))
	for _, ev := range evs {
		r.dispatch(ctx, ev, func(err error) {
			if err != nil {
				b.mu.Lock()
				b.err = cmp.Or(b.err, fmt.Errorf("dispatch %s: %w", ev.ID, err))
				b.mu.Unlock()
			}
			if b.left.Add(-1) == 0 {
				close(b.done)
			}
		})
	}
	return b
}

// settle takes the shard's dispatched batches off the front of its read
// ahead and checkpoints after the last of them. A batch whose dispatch
// failed is an error: the shard is read again from the checkpoint.
func (r *StreamReader) settle(ctx context.Context, shardID string) error {
	bs, last := r.ahead[shardID], ""
	for ; len(bs) > 0; bs = bs[1:] {
		select {
		case <-bs[0].done:
		default:
			r.ahead[shardID] = bs
			return r.checkpoint(ctx, shardID, last)
		}
		bs[0].mu.Lock()
		err := bs[0].err
		bs[0].mu.Unlock()
		if err != nil {
			return err
		}
		last = bs[0].last
	}
	r.ahead[shardID] = nil
	return r.checkpoint(ctx, shardID, last)
}

// checkpoint records that the shard was dispatched up to seq (none: nothing
// to record).
func (r *StreamReader) checkpoint(ctx context.Context, shardID, seq string) error {
	if seq == "" {
		return nil
	}
	return dbErr("checkpoint", r.db.table.Put(checkpointItem{PK: streamCheckpointPK, SK: checkpointSK(shardID), Type: typeCheckpoint, Seq: seq}).Run(ctx))
}

// streamStrings keeps the string attributes of a stream image.
func streamStrings(img map[string]stypes.AttributeValue) map[string]string {
	out := make(map[string]string, len(img))
	for k, v := range img {
		if s, ok := v.(*stypes.AttributeValueMemberS); ok {
			out[k] = s.Value
		}
	}
	return out
}
