package store

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/tenant"
)

// BenchmarkAuthorizationRead prices what the authorization read gained when
// it started reading the org item with the caller's edge (the rule: an
// org being offboarded is 404 to every member from the moment it is
// marked): the edge alone with a consistent GetItem (before) against the org
// item and the edge in one consistent BatchGetItem (now), on DynamoDB Local.
// rcu/op is the read capacity DynamoDB reports for one read.
func BenchmarkAuthorizationRead(b *testing.B) {
	ctx := context.Background()
	client := NewClient(dynamotest.Config(b), Options{Endpoint: dynamotest.Endpoint()})
	name := dynamotest.TableName(b)
	if err := Migrate(ctx, client, name); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	d := Open(client, name)
	now := time.Now()
	o := tenant.Org{ID: "01HZX3J6Q8W9E2R4T6Y8V0K2M4", Name: "Bench", Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := (&Orgs{d}).CreateOrg(ctx, o, tenant.User{OrgID: o.ID, UserID: "u_bench", Email: "bench@example.com",
		Name: "Bench", Role: authz.Owner, JoinedAt: now, UpdatedAt: now, Version: 1}, audit.NewEvent(ctx, ids.NewGenerator(nil), audit.Outsider(o.ID, "u_bench"), "org.create", "org", o.ID, now, nil)); err != nil {
		b.Fatal(err)
	}
	ok, uk := orgKey(o.ID), orgUserKey(o.ID, "u_bench")
	keyOf := func(k key) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}}
	}
	b.Run("before=GetItem(edge)", func(b *testing.B) {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: keyOf(uk), ConsistentRead: aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			b.Fatal(err)
		}
		rcu := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		for b.Loop() {
			if _, err := getItem[orgUserItem](ctx, d, uk, true, errUserNotFound, "authorization read"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(rcu, "rcu/op")
	})
	b.Run("now=BatchGetItem(org,edge)", func(b *testing.B) {
		out, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			RequestItems: map[string]types.KeysAndAttributes{name: {Keys: []map[string]types.AttributeValue{keyOf(ok), keyOf(uk)}, ConsistentRead: aws.Bool(true)}}})
		if err != nil {
			b.Fatal(err)
		}
		var rcu float64
		for _, c := range out.ConsumedCapacity {
			rcu += aws.ToFloat64(c.CapacityUnits)
		}
		t := &Orgs{d}
		for b.Loop() {
			if _, err := t.OrgAccess(ctx, o.ID, "u_bench", access.Target{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(rcu, "rcu/op")
	})
}
