package graphapi

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Trace makes a span of each nesting level of every operation (levelSpans);
// call it before the server runs anything. Without it nothing is traced,
// and nothing is spent on tracing.
func (s *Server) Trace(t trace.Tracer) {
	s.exec.Use(levelSpans{tracer: t})
}

// levelSpans is the gqlgen extension that makes one span per nesting
// level of an operation, "graphql level <n>", the parent of the level's
// DynamoDB calls (docs/data-model.md, section 3a). It ends when the last of
// the level's running resolvers returns; a later one opens another span.
// Its attributes are the level and its fields' schema names, never an
// argument or a value.
type levelSpans struct{ tracer trace.Tracer }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
	graphql.FieldInterceptor
} = levelSpans{}

func (levelSpans) ExtensionName() string                   { return "LevelSpans" }
func (levelSpans) Validate(graphql.ExecutableSchema) error { return nil }

type levelsKey struct{}

// levels are one operation's open level spans.
type levels struct {
	root context.Context // carries the request's span, the levels' parent
	mu   sync.Mutex
	open map[int]*level
}

type level struct {
	span    trace.Span
	running int
	fields  map[string]bool // schema field names: a bounded set
}

func (l levelSpans) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(context.WithValue(ctx, levelsKey{}, &levels{root: ctx, open: map[int]*level{}}))
}

func (l levelSpans) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	ls, _ := ctx.Value(levelsKey{}).(*levels)
	if ls == nil || fc == nil || !fc.IsResolver || fc.Field.Field == nil {
		return next(ctx)
	}
	depth := 1
	for p := fc.Parent; p != nil; p = p.Parent {
		if p.IsResolver {
			depth++
		}
	}
	ls.mu.Lock()
	lv := ls.open[depth]
	if lv == nil {
		// A sibling of the other levels, under the request's span.
		_, span := l.tracer.Start(ls.root, "graphql level "+strconv.Itoa(depth), trace.WithAttributes(attribute.Int("graphql.level", depth)))
		lv = &level{span: span, fields: map[string]bool{}}
		ls.open[depth] = lv
	}
	lv.running++
	lv.fields[fc.Field.Name] = true
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if lv.running--; lv.running == 0 {
			lv.span.SetAttributes(attribute.String("graphql.fields", strings.Join(slices.Sorted(maps.Keys(lv.fields)), ",")))
			lv.span.End()
			delete(ls.open, depth)
		}
	}()
	return next(trace.ContextWithSpan(ctx, lv.span))
}
