// Package store is tenantd's persistence, and the only package that knows
// DynamoDB keys: one table (docs/data-model.md). It implements the domain
// packages' Storer interfaces and translates DynamoDB failures into errs kinds.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/errs"
)

// DB is a handle on tenantd's table, shared by the per-domain stores. It
// writes the times the services' clock gave, and reads the wall clock only
// where processes coordinate on real time (leases, marks, cut-offs).
type DB struct {
	client   *dynamodb.Client
	db       *dynamo.DB
	table    dynamo.Table
	lease    time.Duration // of an unfinished deletion (deletion.go)
	grace    time.Duration // before an offboarding's last sweep (offboard.go)
	maxOwned int           // orgs one user may have created (SetMaxOwnedOrgs)
}

// Options tune how the client reaches DynamoDB.
type Options struct {
	// Endpoint overrides the service endpoint (DynamoDB Local), without
	// response checksums (Local omits them on errors: a warning per 4xx).
	Endpoint string
	// APIOptions are extra smithy middleware (metrics, operation recording).
	APIOptions []func(*middleware.Stack) error
}

// NewClient builds the DynamoDB client tenantd uses (retrying tx conflicts).
func NewClient(cfg aws.Config, opts Options) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
			o.DisableValidateResponseChecksum = true
		}
		o.Retryer = retry.NewStandard(dynamo.RetryTxConflicts)
		o.APIOptions = append(o.APIOptions, opts.APIOptions...)
	})
}

// Open returns a DB on the named table through client.
func Open(client *dynamodb.Client, table string) *DB {
	db := dynamo.NewFromIface(client)
	return &DB{client: client, db: db, table: db.Table(table), lease: DefaultDeletionLease, grace: DefaultDeletionGrace, maxOwned: DefaultMaxOwnedOrgs}
}

// SetDeletionTiming sets a deletion's lease and an offboarding's grace
// before its last sweep (0 on DynamoDB Local). Call it before use.
func (d *DB) SetDeletionTiming(lease, grace time.Duration) {
	if lease > 0 {
		d.lease = lease
	}
	if grace >= 0 {
		d.grace = grace
	}
}

// Client returns the underlying SDK client (for Migrate and health checks).
func (d *DB) Client() *dynamodb.Client { return d.client }

// TableName is the name of the table in use.
func (d *DB) TableName() string { return d.table.Name() }

// Ping checks that the table exists and is ACTIVE.
func (d *DB) Ping(ctx context.Context) error {
	out, err := d.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.table.Name())})
	if err != nil {
		return fmt.Errorf("describe table: %w", translate(err))
	}
	if out.Table == nil {
		return fmt.Errorf("describe table: %w", errs.E(errs.Unavailable, "db_unavailable", "DynamoDB described no table"))
	}
	if out.Table.TableStatus != types.TableStatusActive {
		return fmt.Errorf("table %s is %s", d.table.Name(), out.Table.TableStatus)
	}
	return nil
}

// getItem reads one item by its key, or notFound (nil: the zero item), after
// checks of the IDs in k (checkIDs): the first that failed is returned.
func getItem[I any](ctx context.Context, d *DB, k key, consistent bool, notFound error, op string, checks ...error) (I, error) {
	var it I
	if err := checkIDs(checks...); err != nil {
		return it, err
	}
	err := d.table.Get(attrPK, k.PK).Range(attrSK, dynamo.Equal, k.SK).Consistent(consistent).One(ctx, &it)
	if errors.Is(err, dynamo.ErrNotFound) {
		return it, notFound
	}
	return it, dbErr(op, err)
}

// updateAt, deleteAt and checkAt start a request on the item at k.
func (d *DB) updateAt(k key) *dynamo.Update { return d.table.Update(attrPK, k.PK).Range(attrSK, k.SK) }
func (d *DB) deleteAt(k key) *dynamo.Delete { return d.table.Delete(attrPK, k.PK).Range(attrSK, k.SK) }
func (d *DB) checkAt(k key) *dynamo.ConditionCheck {
	return d.table.Check(attrPK, k.PK).Range(attrSK, k.SK)
}

// markedForDeletion is an item a deletion marks (deleting) before it is gone.
type markedForDeletion interface{ beingDeleted() bool }

// getLive is getItem of an item a deletion marks: once marked, notFound.
func getLive[I markedForDeletion](ctx context.Context, d *DB, k key, notFound error, op string, checks ...error) (I, error) {
	it, err := getItem[I](ctx, d, k, false, notFound, op, checks...)
	if err == nil && it.beingDeleted() {
		err = notFound
	}
	return it, err
}

// checkIDs returns the first failed check of IDs (ids.Resource, ids.User):
// every store method checks its IDs before a key of them reaches DynamoDB.
func checkIDs(checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// ifSet is check of an optional ID: nil when there is none.
func ifSet(check func(field, id string) error, field, id string) error {
	if id == "" {
		return nil
	}
	return check(field, id)
}

// setOrRemove sets attr to v, or removes it when v is empty: an item
// written whole has no empty string either (guregu/dynamo leaves it out).
func setOrRemove(u *dynamo.Update, attr, v string) *dynamo.Update {
	if v == "" {
		return u.Remove(attr)
	}
	return u.Set(attr, v)
}

// condFailed reports whether err is a failed single-item condition, and
// whether the item existed.
func condFailed(err error) (failed, existed bool) {
	var cfe *types.ConditionalCheckFailedException
	if errors.As(err, &cfe) {
		return true, cfe.Item != nil
	}
	return false, false
}

// condErr is the outcome of a single-item conditional write: ifFailed when
// its condition failed, else dbErr.
func condErr(err, ifFailed error, op string) error {
	if failed, _ := condFailed(err); failed {
		return ifFailed
	}
	return dbErr(op, err)
}

// dbErr is err, if any, of a request to DynamoDB, translated and wrapped by op.
func dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, translate(err))
}

// errUnavailable is every failure to reach or be served by DynamoDB: a 503.
func errUnavailable(err error) error {
	return &errs.Error{Kind: errs.Unavailable, Code: "db_unavailable", Message: "the database is busy or unreachable; retry later", Err: err}
}

// translate maps SDK errors that are not conditional failures: a failure
// of DynamoDB or of reaching it is Unavailable (a deadline: "timeout"), so
// clients see 503, never 500; a cancelled request stays context.Canceled.
func translate(err error) error {
	if _, ok := errs.As(err); err == nil || ok || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &errs.Error{Kind: errs.Unavailable, Code: "timeout", Message: "the request took too long; retry later", Err: err}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"TransactionConflictException", "InternalServerError", "ServiceUnavailable", "LimitExceededException",
			// The table is missing or the credentials are refused: a fault of
			// the deployment, not the request, until an operator acts.
			"ResourceNotFoundException", "UnrecognizedClientException", "AccessDeniedException", "InvalidSignatureException",
			"ExpiredTokenException", "MissingAuthenticationTokenException", "IncompleteSignatureException":
			return errUnavailable(err)
		}
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if c := aws.ToString(r.Code); c == "TransactionConflict" || c == "ThrottlingError" || c == "ProvisionedThroughputExceeded" {
				return errUnavailable(err)
			}
		}
	}
	var (
		quota    ratelimit.QuotaExceededError  // what the SDK returns: the value type
		quotaPtr *ratelimit.QuotaExceededError // should a version return a pointer
		max      *retry.MaxAttemptsError
		deser    *smithy.DeserializationError
		resp     *smithyhttp.ResponseError
		send     *smithyhttp.RequestSendError
		netErr   net.Error
	)
	// The retry quota spent, any 5xx, retries run out, an answer that is not
	// DynamoDB's, or no answer at all (refused, reset, DNS, TLS, cut off).
	if errors.As(err, &quota) || errors.As(err, &quotaPtr) || errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 ||
		errors.As(err, &max) || errors.As(err, &deser) || errors.As(err, &send) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return errUnavailable(err)
	}
	return err
}

// batchGet reads keys with BatchGetItems of 100 (guregu/dynamo retries).
func (s *DB) batchGet(ctx context.Context, keys []dynamo.Keyed, consistent bool, out any) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.table.Batch(attrPK, attrSK).Get(keys...).Consistent(consistent).All(ctx, out)
	if err != nil && !errors.Is(err, dynamo.ErrNotFound) {
		return fmt.Errorf("batch get: %w", translate(err))
	}
	return nil
}

// batchGetByID reads the items of distinct IDs with batchGet, after checks
// (as getItem's) and check of each ID; conv turns an item into its ID and
// value, or leaves it out (ok false), as absent items are.
func batchGetByID[I, T any](ctx context.Context, d *DB, idList []string, check func(string) error, keyOf func(string) key,
	consistent bool, op string, conv func(I) (id string, v T, ok bool), checks ...error) (map[string]T, error) {
	if err := checkIDs(checks...); err != nil {
		return nil, err
	}
	keys := make([]dynamo.Keyed, 0, len(idList))
	for _, id := range slices.Compact(slices.Sorted(slices.Values(idList))) {
		if err := check(id); err != nil {
			return nil, err
		}
		k := keyOf(id)
		keys = append(keys, dynamo.Keys{k.PK, k.SK})
	}
	var items []I
	if err := d.batchGet(ctx, keys, consistent, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out := make(map[string]T, len(items))
	for _, it := range items {
		if id, v, ok := conv(it); ok {
			out[id] = v
		}
	}
	return out, nil
}

// deletePartition removes every item of one partition with BatchWriteItem.
func (s *DB) deletePartition(ctx context.Context, pk string) error {
	var keys []dynamo.Keyed
	itr := s.table.Get(attrPK, pk).Project(attrPK, attrSK).Iter()
	var it deletionItem
	for itr.Next(ctx, &it) {
		keys = append(keys, dynamo.Keys{it.PK, it.SK})
	}
	if err := itr.Err(); err != nil {
		return fmt.Errorf("delete partition: %w", translate(err))
	}
	if err := s.batchDelete(ctx, keys); err != nil {
		return fmt.Errorf("delete partition: %w", err)
	}
	return nil
}
