package store_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/store"
)

// TestMigrate: the table is created as store.Schema says, a second migrate
// of an existing table is fine, and expiry by TTL is on.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	client := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()})
	name := dynamotest.TableName(t)
	for i := range 2 {
		if err := store.Migrate(ctx, client, name); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
	}
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(d.Table.GlobalSecondaryIndexes), len(store.Schema.Indexes); got != want {
		t.Errorf("indexes: got %d, want %d", got, want)
	}
	for _, g := range d.Table.GlobalSecondaryIndexes {
		if g.Projection.ProjectionType != types.ProjectionTypeAll {
			t.Errorf("%s projects %s, want ALL", aws.ToString(g.IndexName), g.Projection.ProjectionType)
		}
	}
	if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing: got %+v, want PAY_PER_REQUEST", d.Table.BillingModeSummary)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ttl.TimeToLiveDescription; got == nil || aws.ToString(got.AttributeName) != store.Schema.TTLAttribute ||
		got.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL: got %+v, want enabled on %s", got, store.Schema.TTLAttribute)
	}
}
