package dynamotest_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

func TestCreateAndListTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if ep := dynamotest.Endpoint(); !strings.HasPrefix(ep, "http://") {
		t.Fatalf("Endpoint() = %q, want an http:// URL", ep)
	}
	client := dynamodb.NewFromConfig(dynamotest.Config(t), func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
	})

	name := dynamotest.TableName(t)
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable(%q): %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})

	out, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if !slices.Contains(out.TableNames, name) {
		t.Fatalf("ListTables = %v, want it to contain %q", out.TableNames, name)
	}
}

var validTableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func TestTableName(t *testing.T) {
	seen := map[string]bool{}
	for _, sub := range []string{"plain", "with spaces/and#odd*chars", strings.Repeat("x", 400), "ünïcödé"} {
		t.Run(sub, func(t *testing.T) {
			for range 2 {
				name := dynamotest.TableName(t)
				if !validTableName.MatchString(name) {
					t.Errorf("TableName = %q (len %d), not a valid DynamoDB table name", name, len(name))
				}
				if !strings.HasPrefix(name, "TestTableName") {
					t.Errorf("TableName = %q, want it derived from the test name", name)
				}
				if seen[name] {
					t.Errorf("TableName = %q twice", name)
				}
				seen[name] = true
			}
		})
	}
}

// TestRecorderSkipsEndedContexts: a call whose context ended before it
// started sends nothing and is not recorded; a live call is.
func TestRecorderSkipsEndedContexts(t *testing.T) {
	rec := &dynamotest.Recorder{}
	client := dynamodb.NewFromConfig(dynamotest.Config(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, rec.Middleware)
	})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.ListTables(ended, &dynamodb.ListTablesInput{}); err == nil {
		t.Fatal("ListTables on an ended context: no error")
	}
	if got := rec.Names(); got != "" {
		t.Errorf("recorded %q for a call on an ended context", got)
	}
	if _, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.Names(); got != "ListTables" {
		t.Errorf("recorded %q, want ListTables", got)
	}
}

// TestStreamOff: a table created with a stream has none after StreamOff.
func TestStreamOff(t *testing.T) {
	ctx := context.Background()
	client := dynamodb.NewFromConfig(dynamotest.Config(t))
	name := dynamotest.TableName(t)
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
	}); err != nil {
		t.Fatal(err)
	}
	stream := func() bool {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		s := out.Table.StreamSpecification
		return s != nil && aws.ToBool(s.StreamEnabled)
	}
	if !stream() {
		t.Fatal("the table was created without its stream")
	}
	dynamotest.StreamOff(t, client, name)
	if stream() {
		t.Error("the table's stream is still on after StreamOff")
	}
}
