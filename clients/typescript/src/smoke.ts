// A smoke flow of the TypeScript client against a running tenantd server.
//
//   BASE_URL=http://127.0.0.1:8080 TOKEN_ALICE=<jwt sub=u_alice> TOKEN_BOB=<jwt sub=u_bob> npm run smoke
//
// Every step checks the status and the body; the first mismatch ends the run
// with exit code 1. The last line is `smoke: <n> passed, <m> failed`.
// clients/typescript/smoke_test.go runs it against a fresh server and table.
import { createTenantdClient, ExportFailed, exportOrg, isProblem, type ExportLine, type Schemas } from "./client.js";

type Ticket = Schemas["Ticket"];

const ALICE = "u_alice";
const BOB = "u_bob";
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

class SmokeError extends Error {}

function env(name: string): string {
  const v = process.env[name]?.trim();
  if (!v) {
    throw new SmokeError(`environment variable ${name} is not set`);
  }
  return v;
}

function fail(what: string): never {
  throw new SmokeError(what);
}

function show(v: unknown): string {
  return JSON.stringify(v);
}

function equal(actual: unknown, expected: unknown, what: string): void {
  if (show(actual) !== show(expected)) {
    fail(`${what}: got ${show(actual)}, want ${show(expected)}`);
  }
}

function ok(cond: boolean, what: string): asserts cond {
  if (!cond) {
    fail(what);
  }
}

/** The parts of an openapi-fetch result a step checks. */
interface Result<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** Checks the status and returns the (success) body. */
function expectData<D>(res: Result<D>, status: number, what: string): D {
  if (res.response.status !== status) {
    fail(`${what}: status ${res.response.status}, want ${status}; body ${show(res.error ?? res.data)}`);
  }
  if (res.data === undefined) {
    fail(`${what}: status ${status} without a body`);
  }
  return res.data;
}

/** Checks an error response: the status and an RFC 9457 problem with a code. */
function expectProblem(res: Result<unknown>, status: number, what: string): Schemas["Problem"] {
  if (res.response.status !== status) {
    fail(`${what}: status ${res.response.status}, want ${status}; body ${show(res.error ?? res.data)}`);
  }
  const type = res.response.headers.get("Content-Type") ?? "";
  ok(type.startsWith("application/problem+json"), `${what}: Content-Type ${show(type)}, want application/problem+json`);
  const p = res.error;
  ok(isProblem(p), `${what}: body is not a problem: ${show(p)}`);
  equal(p.status, status, `${what}: problem status`);
  ok(p.code.length > 0, `${what}: problem without a code: ${show(p)}`);
  ok(typeof p.requestId === "string" && p.requestId.length > 0, `${what}: problem without a requestId: ${show(p)}`);
  return p;
}

function etagOf(res: { response: Response }, what: string): string {
  const etag = res.response.headers.get("ETag");
  ok(etag !== null && etag.length > 0, `${what}: no ETag header`);
  return etag;
}

let passed = 0;

async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  try {
    const v = await fn();
    passed++;
    console.log(`ok   ${name}`);
    return v;
  } catch (err) {
    console.log(`FAIL ${name}`);
    throw err;
  }
}

async function main(): Promise<void> {
  const baseUrl = env("BASE_URL");
  const alice = createTenantdClient(baseUrl, env("TOKEN_ALICE"));
  const bob = createTenantdClient(baseUrl, env("TOKEN_BOB"));
  const orgName = `Smoke ${new Date().toISOString()}`;

  const org = await step("create org as Alice (201)", async () => {
    const res = await alice.POST("/v1/orgs", { body: { name: orgName } });
    const o = expectData(res, 201, "createOrg");
    ok(ULID.test(o.id), `createOrg: id ${show(o.id)} is not a ULID`);
    equal(o.name, orgName, "createOrg: name");
    equal(o.version, 1, "createOrg: version");
    return { id: o.id, etag: etagOf(res, "createOrg") };
  });
  const orgPath = { orgId: org.id };

  await step("Alice is the org's owner (GET /v1/me)", async () => {
    const me = expectData(await alice.GET("/v1/me"), 200, "getMe");
    equal(me.userId, ALICE, "getMe: userId");
    equal(me.orgs.find((o) => o.orgId === org.id)?.role, "owner", "getMe: role in the new org");
  });

  await step("add Bob as a member (201)", async () => {
    const res = await alice.POST("/v1/orgs/{orgId}/users", {
      params: { path: orgPath },
      body: { userId: BOB, email: "bob@example.com", name: "Bob", role: "member" },
    });
    const u = expectData(res, 201, "addOrgUser");
    equal([u.userId, u.email, u.name, u.role, u.version], [BOB, "bob@example.com", "Bob", "member", 1], "addOrgUser: user");
    etagOf(res, "addOrgUser");
  });

  const team = await step("create team (201)", async () => {
    const res = await alice.POST("/v1/orgs/{orgId}/teams", {
      params: { path: orgPath },
      body: { name: "Support", description: "First line" },
    });
    const t = expectData(res, 201, "createTeam");
    ok(ULID.test(t.id), `createTeam: id ${show(t.id)} is not a ULID`);
    equal([t.name, t.description, t.version], ["Support", "First line", 1], "createTeam: team");
    // openapi.yaml says a new team has no members, while the server makes its
    // creator the team's owner: only the count's change is checked below.
    ok(Number.isInteger(t.memberCount) && t.memberCount >= 0, `createTeam: memberCount ${show(t.memberCount)}`);
    return t;
  });
  const memberPath = { orgId: org.id, teamId: team.id, userId: BOB };

  await step("PUT Bob as team member (201)", async () => {
    const res = await alice.PUT("/v1/orgs/{orgId}/teams/{teamId}/members/{userId}", {
      params: { path: memberPath },
      body: { role: "member" },
    });
    const m = expectData(res, 201, "putTeamMember (add)");
    equal([m.teamId, m.userId, m.role], [team.id, BOB, "member"], "putTeamMember (add): membership");
  });

  await step("PUT Bob's team role to admin (200)", async () => {
    const res = await alice.PUT("/v1/orgs/{orgId}/teams/{teamId}/members/{userId}", {
      params: { path: memberPath },
      body: { role: "admin" },
    });
    const m = expectData(res, 200, "putTeamMember (change)");
    equal([m.teamId, m.userId, m.role], [team.id, BOB, "admin"], "putTeamMember (change): membership");
    const t = expectData(
      await alice.GET("/v1/orgs/{orgId}/teams/{teamId}", { params: { path: { orgId: org.id, teamId: team.id } } }),
      200,
      "getTeam",
    );
    equal(t.memberCount, team.memberCount + 1, "getTeam: memberCount after adding Bob");
  });

  const created: Ticket[] = [];
  const first = await step("create ticket with team, assignee Bob and tags (201)", async () => {
    const res = await alice.POST("/v1/orgs/{orgId}/tickets", {
      params: { path: orgPath },
      body: { title: "Printer on fire", description: "Smoke everywhere", teamId: team.id, assigneeId: BOB, tags: ["hardware", "urgent"] },
    });
    const t = expectData(res, 201, "createTicket");
    ok(ULID.test(t.id), `createTicket: id ${show(t.id)} is not a ULID`);
    equal(
      [t.title, t.description, t.status, t.priority, t.requesterId, t.assigneeId, t.teamId, t.tags, t.commentCount, t.version],
      ["Printer on fire", "Smoke everywhere", "new", "normal", ALICE, BOB, team.id, ["hardware", "urgent"], 0, 1],
      "createTicket: ticket",
    );
    created.push(t);
    return t;
  });
  const ticketPath = { orgId: org.id, ticketId: first.id };

  const comment = await step("add a comment (201)", async () => {
    const res = await alice.POST("/v1/orgs/{orgId}/tickets/{ticketId}/comments", {
      params: { path: ticketPath },
      body: { body: "Extinguisher on its way." },
    });
    const c = expectData(res, 201, "createComment");
    ok(ULID.test(c.id), `createComment: id ${show(c.id)} is not a ULID`);
    equal([c.ticketId, c.authorId, c.body], [first.id, ALICE, "Extinguisher on its way."], "createComment: comment");
    return c;
  });

  await step("GET the ticket with include=comments (1 comment)", async () => {
    const res = await alice.GET("/v1/orgs/{orgId}/tickets/{ticketId}", {
      params: { path: ticketPath, query: { include: "comments", expand: ["requester", "assignee"] } },
    });
    const t = expectData(res, 200, "getTicket");
    equal(t.id, first.id, "getTicket: id");
    equal(t.commentCount, 1, "getTicket: commentCount");
    equal(t.comments?.map((c) => [c.id, c.authorId, c.body]), [[comment.id, ALICE, comment.body]], "getTicket: comments");
    equal(t.requester?.userId, ALICE, "getTicket: expanded requester");
    equal(t.assignee?.userId, BOB, "getTicket: expanded assignee");
  });

  await step("create 5 more tickets (201 each)", async () => {
    for (let i = 2; i <= 6; i++) {
      const res = await alice.POST("/v1/orgs/{orgId}/tickets", {
        params: { path: orgPath },
        body: { title: `Ticket ${i}`, priority: "low" },
      });
      const t = expectData(res, 201, `createTicket #${i}`);
      equal([t.title, t.priority, t.status, t.requesterId, t.tags], [`Ticket ${i}`, "low", "new", ALICE, []], `createTicket #${i}: ticket`);
      created.push(t);
    }
  });

  await step("list org tickets with limit=2 following nextCursor (6, newest first)", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await alice.GET("/v1/orgs/{orgId}/tickets", {
        params: { path: orgPath, query: cursor === undefined ? { limit: 2 } : { limit: 2, cursor } },
      });
      const page = expectData(res, 200, `listTickets page ${pages + 1}`);
      pages++;
      ok(page.items.length <= 2, `listTickets page ${pages}: ${page.items.length} items, limit 2`);
      seen.push(...page.items.map((t) => t.id));
      cursor = page.nextCursor;
      const link = res.response.headers.get("Link");
      equal(link !== null, cursor !== undefined, `listTickets page ${pages}: Link header present iff nextCursor`);
      ok(pages <= 10, "listTickets: more than 10 pages for 6 tickets");
    } while (cursor !== undefined);
    equal(new Set(seen).size, seen.length, "listTickets: duplicate tickets across pages");
    equal(seen.length, 6, "listTickets: number of tickets");
    equal(seen, created.map((t) => t.id).reverse(), "listTickets: order (newest first)");
    ok(pages >= 3, `listTickets: ${pages} pages, want at least 3`);
  });

  await step("PATCH the org as Bob (member) -> 403 problem+json", async () => {
    const res = await bob.PATCH("/v1/orgs/{orgId}", { params: { path: orgPath }, body: { name: "Bob's org" } });
    const p = expectProblem(res, 403, "updateOrg as Bob");
    console.log(`     403 code=${p.code}`);
  });

  await step("PATCH the org with a stale If-Match -> 412", async () => {
    const renamed = `${orgName} (renamed)`;
    const res = await alice.PATCH("/v1/orgs/{orgId}", {
      params: { path: orgPath, header: { "If-Match": org.etag } },
      body: { name: renamed },
    });
    const o = expectData(res, 200, "updateOrg with the current ETag");
    equal([o.name, o.version], [renamed, 2], "updateOrg: org");
    ok(etagOf(res, "updateOrg") !== org.etag, "updateOrg: ETag did not change");

    const stale = await alice.PATCH("/v1/orgs/{orgId}", {
      params: { path: orgPath, header: { "If-Match": org.etag } },
      body: { name: "Lost update" },
    });
    const p = expectProblem(stale, 412, "updateOrg with a stale If-Match");
    console.log(`     412 code=${p.code}`);

    const now = expectData(await alice.GET("/v1/orgs/{orgId}", { params: { path: orgPath } }), 200, "getOrg");
    equal([now.name, now.version], [renamed, 2], "getOrg after the 412: org unchanged");
  });

  // A line as the export sent it, but its cursor (which says when it expires).
  const withoutCursor = (l: ExportLine): string => JSON.stringify({ ...l, cursor: undefined });
  await step("export the org as Alice, line by line (exportOrg), and resume it", async () => {
    const lines: ExportLine[] = [];
    for await (const line of exportOrg(alice, org.id)) {
      lines.push(line);
    }
    const last = lines[lines.length - 1];
    ok(last !== undefined && last.type === "summary", `exportOrg: last line ${show(last)}, want the summary`);
    equal(lines[0]?.type, "org", "exportOrg: the first line's type");
    const counted: Record<string, number> = {};
    for (const l of lines.slice(0, -1)) {
      ok(typeof l.type === "string" && "cursor" in l && l.cursor.length > 0, `exportOrg: a line without a cursor: ${show(l)}`);
      counted[l.type] = (counted[l.type] ?? 0) + 1;
    }
    for (const [type, n] of Object.entries(last.counts)) {
      equal(counted[type] ?? 0, n, `exportOrg: ${type} lines against the summary's count`);
    }
    equal([last.counts.org, last.counts.user, last.counts.team, last.counts.teamMember, last.counts.ticket, last.counts.comment],
      [1, 2, 1, 2, 6, 1], "exportOrg: counts");
    equal(lines.flatMap((l) => (l.type === "ticket" ? [l.id] : [])), created.map((t) => t.id), "exportOrg: the tickets, oldest first");
    const fifth = lines[4];
    ok(fifth !== undefined && fifth.type !== "summary" && fifth.type !== "error", "exportOrg: a fifth line");
    const rest: string[] = [];
    for await (const line of exportOrg(alice, org.id, { cursor: fifth.cursor })) {
      rest.push(withoutCursor(line));
    }
    equal(rest, lines.slice(5).map(withoutCursor), "exportOrg resumed after the fifth line");
  });

  await step("export the org as Bob (member) -> 403", async () => {
    try {
      for await (const line of exportOrg(bob, org.id)) {
        fail(`exportOrg as Bob: a line ${show(line)}`);
      }
      fail("exportOrg as Bob: no error");
    } catch (err) {
      ok(err instanceof ExportFailed && err.status === 403 && isProblem(err.problem), `exportOrg as Bob: ${show(err)}`);
    }
  });

  await step("mint an API key, act with it, revoke it -> 401", async () => {
    const minted = expectData(
      await alice.POST("/v1/orgs/{orgId}/api-keys", { params: { path: orgPath }, body: { name: "smoke bot", role: "member" } }),
      201,
      "createApiKey",
    );
    ok(minted.secret.startsWith(`tdk_${orgPath.orgId}_${minted.id}_`), `createApiKey: secret ${minted.secret.slice(0, 60)}...`);
    const bot = createTenantdClient(baseUrl, minted.secret);
    const filed = expectData(
      await bot.POST("/v1/orgs/{orgId}/tickets", { params: { path: orgPath }, body: { title: "Filed by a key" } }),
      201,
      "createTicket with the key",
    );
    equal(filed.requesterId, `apiKey:${minted.id}`, "createTicket with the key: requester");
    const listed = expectData(await alice.GET("/v1/orgs/{orgId}/api-keys", { params: { path: orgPath } }), 200, "listApiKeys");
    ok(listed.items.some((k) => k.id === minted.id) && !JSON.stringify(listed).includes(minted.secret), "listApiKeys: the key, no secret");
    const revoked = await alice.DELETE("/v1/orgs/{orgId}/api-keys/{keyId}", { params: { path: { ...orgPath, keyId: minted.id } } });
    equal(revoked.response.status, 204, "revokeApiKey: status");
    expectProblem(await bot.GET("/v1/orgs/{orgId}", { params: { path: orgPath } }), 401, "getOrg with a revoked key");
  });

  console.log(`smoke: ${passed} passed, 0 failed`);
}

main().catch((err: unknown) => {
  console.log(err instanceof SmokeError ? `     ${err.message}` : err);
  console.log(`smoke: ${passed} passed, 1 failed`);
  process.exitCode = 1;
});
