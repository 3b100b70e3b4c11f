package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultTableName is the table's name unless DYNAMODB_TABLE says otherwise.
const DefaultTableName = "tenantd"

// Index is a global secondary index of the table: string keys, ALL projection.
type Index struct {
	Name, PK, SK string
}

// Schema is the single definition of tenantd's table. Migrate creates it;
// deploy/ declares the same table and a test keeps the two from drifting.
var Schema = struct {
	PK, SK  string
	Indexes []Index
	// TTLAttribute holds an epoch-seconds expiry on items that expire.
	TTLAttribute string
	// StreamView is what the change stream carries: the new image, from
	// which the webhook dispatcher reads the audit events.
	StreamView types.StreamViewType
}{
	PK: attrPK, SK: attrSK,
	Indexes: []Index{
		{gsi1, "gsi1pk", "gsi1sk"},
		{gsi2, "gsi2pk", "gsi2sk"},
		{gsi3, "gsi3pk", "gsi3sk"},
		{gsi4, "gsi4pk", "gsi4sk"},
		{gsi5, "gsi5pk", "gsi5sk"},
		{gsi6, "gsi6pk", "gsi6sk"},
		{gsi7, "gsi7pk", "gsi7sk"},
	},
	TTLAttribute: "expiresAt",
	StreamView:   types.StreamViewTypeNewImage,
}

// CreateTableInput is the CreateTable request for the schema: on-demand
// billing, string keys, every GSI projecting ALL attributes.
func CreateTableInput(name string) *dynamodb.CreateTableInput {
	attrs, keys := keyDefinition(Schema.PK, Schema.SK)
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range Schema.Indexes {
		ixAttrs, ixKeys := keyDefinition(ix.PK, ix.SK)
		attrs = append(attrs, ixAttrs...)
		gsis = append(gsis, types.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: ixKeys,
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}})
	}
	return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: attrs, KeySchema: keys, GlobalSecondaryIndexes: gsis, StreamSpecification: streamSpec()}
}

// keyDefinition is a key of string attributes pk (hash) and sk (range):
// their definitions and the key schema.
func keyDefinition(pk, sk string) ([]types.AttributeDefinition, []types.KeySchemaElement) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS},
		}, []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
		}
}

func streamSpec() *types.StreamSpecification {
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: Schema.StreamView}
}

// Migrate creates the table if it does not exist, or adds the indexes and
// stream an earlier version lacks, and waits until it is ACTIVE.
func Migrate(ctx context.Context, client *dynamodb.Client, name string) error {
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		if _, err := client.CreateTable(ctx, CreateTableInput(name)); err != nil {
			var inUse *types.ResourceInUseException
			if !errors.As(err, &inUse) { // lost a race with another migrate: fine
				return fmt.Errorf("create table %s: %w", name, err)
			}
		}
	case err != nil:
		return fmt.Errorf("describe table %s: %w", name, err)
	default:
		if err := addIndexes(ctx, client, name, desc.Table); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		if err := enableStream(ctx, client, name, desc.Table); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	return enableTTL(ctx, client, name)
}

// enableTTL turns on expiry by Schema.TTLAttribute, as deploy/ does.
func enableTTL(ctx context.Context, client *dynamodb.Client, name string) error {
	d, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe TTL of %s: %w", name, err)
	}
	if t := d.TimeToLiveDescription; t != nil && aws.ToString(t.AttributeName) == Schema.TTLAttribute &&
		(t.TimeToLiveStatus == types.TimeToLiveStatusEnabled || t.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(Schema.TTLAttribute), Enabled: aws.Bool(true)}})
	if err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

// enableStream turns on the change stream of a table without it.
func enableStream(ctx context.Context, client *dynamodb.Client, name string, t *types.TableDescription) error {
	if s := t.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		if s.StreamViewType != Schema.StreamView {
			return fmt.Errorf("its stream carries %s, want %s: disable it, then migrate", s.StreamViewType, Schema.StreamView)
		}
		return nil
	}
	if _, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name), StreamSpecification: streamSpec()}); err != nil {
		return fmt.Errorf("enable stream: %w", err)
	}
	return nil
}

// addIndexes creates the indexes of Schema that t lacks, one at a time.
func addIndexes(ctx context.Context, client *dynamodb.Client, name string, t *types.TableDescription) error {
	have := map[string]bool{}
	for _, g := range t.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = true
	}
	for _, ix := range Schema.Indexes {
		if have[ix.Name] {
			continue
		}
		attrs, keys := keyDefinition(ix.PK, ix.SK)
		_, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name), AttributeDefinitions: attrs,
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName: aws.String(ix.Name), KeySchema: keys, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
		if err != nil {
			return fmt.Errorf("add index %s: %w", ix.Name, err)
		}
		if err := waitIndex(ctx, client, name, ix.Name); err != nil {
			return err
		}
	}
	return nil
}

// waitIndex waits until index of table is ACTIVE (built).
func waitIndex(ctx context.Context, client *dynamodb.Client, table, index string) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("wait for index %s: %w", index, err)
		}
		for _, g := range d.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == index && g.IndexStatus == types.IndexStatusActive {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("index %s is not ACTIVE after 10 minutes", index)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
