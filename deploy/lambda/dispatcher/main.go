// Command dispatcher is the webhook dispatcher as an AWS Lambda function:
// the event source mapping of deploy/cloudformation.yaml feeds it the
// table's stream (AWS shards and checkpoints it), and it turns each new
// audit event into one delivery per subscribed endpoint, exactly as
// `api serve` does with WEBHOOK_DISPATCHER=local. The API's replicas
// (WEBHOOK_DISPATCHER=lambda) send the deliveries.
//
// Build: GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap
// ./deploy/lambda/dispatcher, zipped as bootstrap for the provided.al2023
// runtime. Settings: DYNAMODB_TABLE (default tenantd), AWS_REGION.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/webhook"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("aws config", "err", err)
		os.Exit(1)
	}
	table := os.Getenv("DYNAMODB_TABLE")
	if table == "" {
		table = store.DefaultTableName
	}
	db := store.Open(store.NewClient(cfg, store.Options{}), table)
	d := webhook.NewDispatcher(&store.Webhooks{DB: db}, webhook.Policy{}, nil)
	lambda.Start(func(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return handle(ctx, e, d.DispatchAll, log)
	})
}

// handle dispatches the audit events of a batch of stream records as
// api serve's reader does (webhook.Dispatcher.DispatchAll: each org's in
// order, orgs at once). It reports the record of the first event whose
// dispatch failed: with ReportBatchItemFailures, Lambda checkpoints
// before it and sends it and the rest again (dispatching is idempotent).
func handle(ctx context.Context, e events.DynamoDBEvent, dispatch func(context.Context, []audit.Event) (int, error), log *slog.Logger) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	var evs []audit.Event
	var seqs []string
	for _, r := range e.Records {
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		img := map[string]string{}
		for k, v := range r.Change.NewImage {
			if v.DataType() == events.DataTypeString {
				img[k] = v.String()
			}
		}
		if ev, ok := store.AuditEventFromImage(img); ok {
			evs, seqs = append(evs, ev), append(seqs, r.Change.SequenceNumber)
		}
	}
	if i, err := dispatch(ctx, evs); err != nil {
		log.Warn("dispatch failed: the batch is retried from this record", "eventId", evs[i].ID, "err", err)
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seqs[i]})
	}
	return resp, nil
}
