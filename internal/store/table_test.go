package store_test

import (
	"context"
	"strings"
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

// TestMigrateAddsIndexes: a table created by an earlier version, without
// the newer indexes (GSI6 and GSI7 came with the priority and assignee
// filters), gets them from Migrate, filled with the items already there.
func TestMigrateAddsIndexes(t *testing.T) {
	ctx := context.Background()
	client := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()})
	name := dynamotest.TableName(t)
	old := store.CreateTableInput(name)
	old.GlobalSecondaryIndexes = old.GlobalSecondaryIndexes[:5]
	var attrs []types.AttributeDefinition
	for _, a := range old.AttributeDefinitions {
		if n := aws.ToString(a.AttributeName); !strings.HasPrefix(n, "gsi6") && !strings.HasPrefix(n, "gsi7") {
			attrs = append(attrs, a)
		}
	}
	old.AttributeDefinitions = attrs
	if _, err := client.CreateTable(ctx, old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberS{Value: "s"},
		"gsi6pk": &types.AttributeValueMemberS{Value: "x"}, "gsi6sk": &types.AttributeValueMemberS{Value: "y"}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(d.Table.GlobalSecondaryIndexes), len(store.Schema.Indexes); got != want {
		t.Fatalf("indexes after migrate: %d, want %d", got, want)
	}
	q, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String("GSI6"),
		KeyConditionExpression:    aws.String("gsi6pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "x"}}})
	if err != nil || len(q.Items) != 1 {
		t.Errorf("the new GSI6 does not hold the item written before it: %v %v", q, err)
	}
}
