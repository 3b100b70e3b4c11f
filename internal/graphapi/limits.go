package graphapi

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The costs the complexity limit counts: every field 1 (gqlgen's default),
// a point read pointRead more, a connection listCost plus first times its
// selection. A limit of C bounds a request to about C/pointRead point
// reads, and its pages to what C can pay for.
const (
	pointRead = 50
	listCost  = 10
)

func setComplexity(c *ComplexityRoot) {
	byID := func(child int, _ string) int { return pointRead + child }
	list := func(child int, first *int, _ *string) int {
		n := page.DefaultLimit
		if first != nil && *first > 0 {
			n = min(*first, page.MaxLimit) // a larger first is refused when the field runs
		}
		return listCost + n*child
	}
	c.Query.Org, c.Org.User, c.Org.Team, c.Org.Ticket = byID, byID, byID, byID
	c.MeOrg.Org = func(child int) int { return pointRead + child }
	c.Me.Orgs, c.Org.Users, c.Org.Teams, c.Org.Invitations, c.Org.Webhooks = list, list, list, list, list
	c.Webhook.Deliveries, c.OrgUser.Teams, c.OrgUser.AssignedTickets, c.Team.Members, c.Ticket.Comments = list, list, list, list, list
	c.Org.AuditLog = func(child int, _, _ *time.Time, first *int, after *string) int { return list(child, first, after) }
	c.Org.Tickets = func(child int, _ *ticket.Status, _ *ticket.Priority, _, _, _ *string, _ *SortOrder, first *int, after *string) int {
		return list(child, first, after)
	}
	c.Team.Tickets = func(child int, _ *ticket.Status, first *int, after *string) int { return list(child, first, after) }
	c.Mutation.CreateTicket = func(child int, _ string, _ CreateTicketInput, _ *string) int { return pointRead + child }
	c.Mutation.UpdateTicket = func(child int, _, _ string, _ *int, _ UpdateTicketInput) int { return pointRead + child }
	c.Mutation.AddComment = func(child int, _, _, _ string, _ *string) int { return pointRead + child }
}

// depthLimit refuses an operation whose selections nest deeper than max
// (fragments followed; the introspection fields __schema and __type do not
// count), before any resolver runs.
type depthLimit struct{ max int }

var _ interface {
	graphql.OperationContextMutator
	graphql.HandlerExtension
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	if depth := selectionDepth(rc.Operation.SelectionSet, 0, d.max); depth > d.max {
		err := gqlerror.Errorf("operation is more than %d levels deep", d.max)
		errcode.Set(err, "DEPTH_LIMIT_EXCEEDED")
		return err
	}
	return nil
}

// selectionDepth is the depth of set below a selection at depth, giving up
// once it passes limit (validation has refused fragment cycles already).
func selectionDepth(set ast.SelectionSet, depth, limit int) int {
	deepest := depth
	if depth > limit {
		return depth
	}
	for _, s := range set {
		var d int
		switch s := s.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				continue
			}
			d = selectionDepth(s.SelectionSet, depth+1, limit) // a leaf: depth+1
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, depth, limit)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				d = selectionDepth(s.Definition.SelectionSet, depth, limit)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// documentCheck refuses, from the parsed document before it is validated,
// an operation that is not a query in a QueryOnly request (NotAQuery), and
// one whose fields, fragment spreads expanded, number more than maxFields:
// a 1 KB document of nested spreads can expand to 2^30 fields, which
// validation and the other limits would walk for minutes. Documents whose
// count passed are remembered (bounded LRU).
type documentCheck struct {
	maxFields int
	passed    graphql.Cache[struct{}]
}

var _ interface {
	graphql.OperationParameterMutator
	graphql.HandlerExtension
} = (*documentCheck)(nil)

func (*documentCheck) ExtensionName() string                   { return "DocumentCheck" }
func (*documentCheck) Validate(graphql.ExecutableSchema) error { return nil }
func (x *documentCheck) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	rs := state(ctx)
	if p.Query == "" {
		return nil
	}
	_, counted := x.passed.Get(ctx, p.Query)
	if counted && !rs.queryOnly {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, parserTokenLimit)
	if err != nil {
		return nil // the executor's own parse reports it
	}
	if op := doc.Operations.ForName(p.OperationName); rs.queryOnly && op != nil && op.Operation != ast.Query {
		rs.notAQuery = true
		return gqlerror.Errorf("GET runs queries only")
	}
	if counted {
		return nil
	}
	if n := expandedFields(doc, x.maxFields); n > x.maxFields {
		err := gqlerror.Errorf("operation is too complex: its fields, fragments expanded, are more than %d", x.maxFields)
		errcode.Set(err, "COMPLEXITY_LIMIT_EXCEEDED")
		return err
	}
	x.passed.Add(ctx, p.Query, struct{}{})
	return nil
}

// expandedFields counts the fields of doc's operations with fragment
// spreads expanded, each fragment's count computed once, stopping past
// limit. A spread of an unknown fragment or within a cycle counts nothing
// (validation refuses both).
func expandedFields(doc *ast.QueryDocument, limit int) int {
	memo := map[string]int{}
	visiting := map[string]bool{}
	add := func(a, b int) int { return min(a+b, limit+1) }
	var set func(ast.SelectionSet) int
	fragment := func(name string) int {
		if n, ok := memo[name]; ok {
			return n
		}
		def := doc.Fragments.ForName(name)
		if def == nil || visiting[name] {
			return 0
		}
		visiting[name] = true
		n := set(def.SelectionSet)
		visiting[name] = false
		memo[name] = n
		return n
	}
	set = func(ss ast.SelectionSet) int {
		n := 0
		for _, s := range ss {
			switch s := s.(type) {
			case *ast.Field:
				n = add(n, add(1, set(s.SelectionSet)))
			case *ast.InlineFragment:
				n = add(n, set(s.SelectionSet))
			case *ast.FragmentSpread:
				n = add(n, fragment(s.Name))
			}
			if n > limit {
				return n
			}
		}
		return n
	}
	total := 0
	for _, op := range doc.Operations {
		total = add(total, set(op.SelectionSet))
	}
	return total
}
