// A driver of the contract through a client that @hey-api/openapi-ts
// generated, at test time, from the running server's GET /openapi.yaml: an
// integrator's view, independent of the project's own generators.
//
//   SPEC=spec.yaml npm run generate && npm run build &&
//   BASE_URL=http://127.0.0.1:8080 TOKEN_ALICE=<jwt u_alice> TOKEN_BOB=<jwt u_bob> npm run drive
//
// clients/typescript/heyapi_test.go (make client-check) runs it. The last
// line is `drive: <n> passed, <m> failed`; exit code 1 on any failure.
import { createClient } from "./gen/client";
import * as api from "./gen/sdk.gen";
import type { Problem, Ticket } from "./gen/types.gen";

function env(name: string): string {
  const v = process.env[name]?.trim();
  if (!v) throw new Error(`environment variable ${name} is not set`);
  return v;
}

const baseUrl = env("BASE_URL");
const as = (token: string) => createClient({ baseUrl, auth: () => token });
const alice = as(env("TOKEN_ALICE"));
const bob = as(env("TOKEN_BOB"));

let passed = 0;
let failed = 0;
async function step(name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(what);
}
function problem(p: unknown): Problem {
  const q = p as Problem;
  check(typeof q?.code === "string" && typeof q?.status === "number", `not a problem: ${JSON.stringify(p)}`);
  return q;
}

async function main(): Promise<void> {
  let org = "";
  let ticket: Ticket | undefined;
  let etag = "";

  await step("GET /openapi.yaml is YAML text, as declared", async () => {
    const r = await api.getOpenApi({ client: alice, parseAs: "text" });
    check(r.response.status === 200, `status ${r.response.status}`);
    check(typeof r.data === "string" && r.data.startsWith("openapi: 3"), `body is ${typeof r.data}`);
  });
  await step("createOrg", async () => {
    const r = await api.createOrg({ client: alice, body: { name: "Driven" } });
    check(r.response.status === 201 && !!r.data, `status ${r.response.status} ${JSON.stringify(r.error)}`);
    org = r.data.id;
  });
  await step("addOrgUser", async () => {
    const r = await api.addOrgUser({ client: alice, path: { orgId: org }, body: { userId: "u_bob", email: "bob@example.com", name: "Bob", role: "member" } });
    check(r.response.status === 201 && r.data?.role === "member", `status ${r.response.status} ${JSON.stringify(r.error)}`);
  });
  await step("a member edits their own name; /v1/me shows it", async () => {
    const r = await api.updateOrgUser({ client: bob, path: { orgId: org, userId: "u_bob" }, body: { name: "Robert" } });
    check(r.response.status === 200 && r.data?.name === "Robert", `status ${r.response.status} ${JSON.stringify(r.error)}`);
    const me = await api.getMe({ client: bob });
    check(me.data?.orgs.some((o) => o.orgId === org && o.userName === "Robert") === true, JSON.stringify(me.data));
  });
  await step("createTicket", async () => {
    const r = await api.createTicket({ client: bob, path: { orgId: org }, body: { title: "Printer on fire", priority: "urgent", assigneeId: "u_bob" } });
    check(r.response.status === 201 && !!r.data, `status ${r.response.status} ${JSON.stringify(r.error)}`);
    ticket = r.data;
    etag = r.response.headers.get("ETag") ?? "";
    check(/^"1-[0-9a-f]{16}"$/.test(etag), `ETag ${etag}`);
  });
  await step("listTickets by priority within a status, oldest first", async () => {
    const r = await api.listTickets({ client: alice, path: { orgId: org }, query: { priority: "urgent", status: "new", order: "asc" } });
    check(r.response.status === 200 && r.data?.items.length === 1 && r.data.items[0]?.id === ticket?.id, JSON.stringify(r.data ?? r.error));
  });
  await step("listTickets by assignee within a status", async () => {
    const r = await api.listTickets({ client: alice, path: { orgId: org }, query: { assigneeId: "u_bob", status: "new" } });
    check(r.response.status === 200 && r.data?.items.length === 1, JSON.stringify(r.data ?? r.error));
  });
  await step("priority with assigneeId is a 400 naming both", async () => {
    const r = await api.listTickets({ client: alice, path: { orgId: org }, query: { priority: "urgent", assigneeId: "u_bob" } });
    const p = problem(r.error);
    check(r.response.status === 400, `status ${r.response.status} ${JSON.stringify(p)}`);
    const fields = (p.errors ?? []).map((e) => `${e.in} ${e.field} ${e.code}`).sort();
    check(JSON.stringify(fields) === JSON.stringify(["query assigneeId unserved_filter", "query priority unserved_filter"]), JSON.stringify(fields));
  });
  await step("an unknown query parameter is a 400 that names it", async () => {
    const r = await api.listTickets({ client: alice, path: { orgId: org }, query: { sort: "asc" } as never });
    const p = problem(r.error);
    check(r.response.status === 400 && (p.errors ?? []).some((e) => e.field === "sort" && e.code === "unknown_parameter"), JSON.stringify(p));
  });
  await step("a body with two problems lists both", async () => {
    const r = await api.createTicket({ client: bob, path: { orgId: org }, body: { title: "", priority: "whenever" } as never });
    const p = problem(r.error);
    check(r.response.status === 400 && (p.errors ?? []).length === 2, JSON.stringify(p));
  });
  await step("a comment moves the ETag; If-None-Match of the new one is a 304", async () => {
    const c = await api.createComment({ client: alice, path: { orgId: org, ticketId: ticket!.id }, body: { body: "Have you tried water?" } });
    check(c.response.status === 201, `comment status ${c.response.status}`);
    const g = await api.getTicket({ client: alice, path: { orgId: org, ticketId: ticket!.id } });
    const tag = g.response.headers.get("ETag") ?? "";
    check(tag !== etag && tag.startsWith(`"1-`), `ETag ${tag} after a comment (before ${etag})`);
    const nm = await api.getTicket({ client: alice, path: { orgId: org, ticketId: ticket!.id }, headers: { "If-None-Match": tag } });
    check(nm.response.status === 304, `If-None-Match: ${nm.response.status}`);
  });
  await step("an edit with the ETag read before the comment still commits", async () => {
    const r = await api.updateTicket({ client: bob, path: { orgId: org, ticketId: ticket!.id }, headers: { "If-Match": etag }, body: { status: "open" } });
    check(r.response.status === 200 && r.data?.version === 2, `status ${r.response.status} ${JSON.stringify(r.error)}`);
  });
  await step("a stale If-Match is a 412 problem", async () => {
    const r = await api.updateTicket({ client: bob, path: { orgId: org, ticketId: ticket!.id }, headers: { "If-Match": etag }, body: { status: "pending" } });
    check(r.response.status === 412 && problem(r.error).code === "version_mismatch", `status ${r.response.status}`);
  });
  await step("the audit log's changes are typed values", async () => {
    const r = await api.listAuditEvents({ client: alice, path: { orgId: org } });
    check(r.response.status === 200 && !!r.data, `status ${r.response.status}`);
    const ch = r.data.items.find((e) => e.action === "ticket.update")?.changes.find((c) => c.field === "status");
    check(ch?.before === "new" && ch?.after === "open", JSON.stringify(ch));
  });
  await step("rate-limit fields on an answer", async () => {
    const r = await api.getOrg({ client: alice, path: { orgId: org } });
    check(/"org";q=\d+;w=\d+/.test(r.response.headers.get("RateLimit-Policy") ?? ""), `RateLimit-Policy ${r.response.headers.get("RateLimit-Policy")}`);
  });
  console.log(`drive: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) process.exit(1);
}

main().catch((e) => {
  console.log(`drive: aborted: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
