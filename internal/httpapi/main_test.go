// The API tests drive a real server on DynamoDB Local through the client
// generated from openapi.yaml, and read as its specification. A resource's
// behaviour is one test in the file named as its product file (TestOrg in
// org_test.go, TestUser in user_test.go, TestTeam, TestMember, TestTicket,
// TestInvitation, TestAuditLog), with a subtest per status, each with a
// server of its own, and in it a subtest per operation and case, started
// with spec: TestTicket/412/updateTicket, TestTicket/404/getTicket/unknown
// ticket. What every operation answers alike is a test generated from the
// spec, with a subtest "<status>/<operationId>/<case>" per operation that
// documents the status: 401 and 413 and 500 in errors_test.go, 415 and
// unknown query parameters (400) in validation_test.go, 429 in
// ratelimit_test.go, 503 in unavailable_test.go, 304 in
// conditional_test.go, 404 to an outsider in matrix_test.go, each role's
// answer in roles_test.go, 422 in idempotency_test.go. Once the whole
// package has run, TestMain fails it unless every response openapi.yaml
// documents was such a subtest (statuses_test.go), and every documented
// success status was answered.
//
// The harness (the server, its validating clients, worlds of users) is
// internal/apitest, which GraphQL's tests (internal/graphapi) share; this
// file maps the names these tests have always used to it.
package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/tenantd/tenantd/internal/apitest"
	"github.com/tenantd/tenantd/internal/dynamotest"
)

// TestMain runs the package's tests on one DynamoDB Local. The tests that
// mostly wait (for a deadline, a backoff, a paused DynamoDB Local) call
// t.Parallel: they run two at a time once the others have finished, so
// their waits overlap instead of adding up.
func TestMain(m *testing.M) {
	code := dynamotest.Run(m)
	if code == 0 && apitest.WholeSuite() {
		// The resource tests each run their own servers: only all of them
		// together must produce every documented success status, and
		// have a subtest for every documented response (statuses_test.go).
		code = apitest.CheckCovered(http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent)
		if c := checkDocumentedStatuses(os.Stderr, testing.Verbose()); c != 0 {
			code = c
		}
	}
	os.Exit(code)
}

// The harness's names, as these tests spell them.
type (
	testServer  = apitest.Server
	actor       = apitest.Actor
	world       = apitest.World
	role        = apitest.Role
	statusCoder = apitest.StatusCoder
	specOp      = apitest.SpecOp
	tbKey       = apitest.TBKey
	apiResp     = apitest.Response
	apiRespE    = apitest.ResponseOrErr
	dbItem      = apitest.Item
	logBuffer   = apitest.LogBuffer
)

const (
	testSecret  = apitest.TestSecret
	problemJSON = apitest.ProblemJSON

	orgOwner   = apitest.OrgOwner
	orgAdmin   = apitest.OrgAdmin
	orgMember  = apitest.OrgMember
	teamOwner  = apitest.TeamOwner
	teamAdmin  = apitest.TeamAdmin
	teamMember = apitest.TeamMember
	requester  = apitest.Requester
	assignee   = apitest.Assignee
)

var (
	MustServer          = apitest.MustServer
	withTransport       = apitest.WithTransport
	withAPIOptions      = apitest.WithAPIOptions
	withRequestTimeout  = apitest.WithRequestTimeout
	withRateLimit       = apitest.WithRateLimit
	withCallerRateLimit = apitest.WithCallerRateLimit
	withVerifier        = apitest.WithVerifier
	withDeletionLease   = apitest.WithDeletionLease
	withOffboarding     = apitest.WithOffboarding
	withMaxHeaderBytes  = apitest.WithMaxHeaderBytes
	withEndpoints       = apitest.WithEndpoints
	withLog             = apitest.WithLog

	MustWorld      = apitest.MustWorld
	MustOrg        = apitest.MustOrg
	MustUser       = apitest.MustUser
	MustTeam       = apitest.MustTeam
	MustMember     = apitest.MustMember
	MustTicket     = apitest.MustTicket
	MustComment    = apitest.MustComment
	MustInvitation = apitest.MustInvitation
	roles          = apitest.Roles
	allEvents      = apitest.AllEvents

	loadSpec       = apitest.LoadSpec
	specOperations = apitest.SpecOperations
	spec           = apitest.Spec

	mustStatus  = apitest.MustStatus
	wantProblem = apitest.WantProblem
	problemOf   = apitest.ProblemOf
	decodeJSON  = apitest.DecodeJSON
	truncate    = apitest.Truncate
	mustHealthy = apitest.MustHealthy

	doReq          = apitest.DoReq
	validating     = apitest.Validating
	doReqE         = apitest.DoReqE
	scanAll        = apitest.ScanAll
	itemsOf        = apitest.ItemsOf
	seriesCount    = apitest.SeriesCount
	requestsByCode = apitest.RequestsByCode
	closedPort     = apitest.ClosedPort
	no500          = apitest.No500
	randULID       = apitest.RandULID
	leaks          = apitest.Leaks
	gql            = apitest.GQL

	bg = context.Background()
)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
