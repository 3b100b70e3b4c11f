// A GraphQL flow against a running tenantd server, driven by graphql-request
// (a widely used GraphQL client library), over the schema's Relay
// connections:
//
//   BASE_URL=http://127.0.0.1:8080 TOKEN_ALICE=<jwt sub=u_alice> npm run graphql
//
// The org it reads is set up through the REST client (the GraphQL API has no
// createOrg). The last line is `graphql: <n> passed, 0 failed`;
// clients/typescript/smoke_test.go runs it after the REST smoke flow.
import { createHash, randomUUID } from "node:crypto";

import { ClientError, GraphQLClient, gql } from "graphql-request";

import { createTenantdClient } from "./client.js";

class FlowError extends Error {}

function env(name: string): string {
  const v = process.env[name]?.trim();
  if (!v) {
    throw new FlowError(`environment variable ${name} is not set`);
  }
  return v;
}

function show(v: unknown): string {
  return JSON.stringify(v);
}

function ok(cond: boolean, what: string): asserts cond {
  if (!cond) {
    throw new FlowError(what);
  }
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

interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

interface TicketNode {
  id: string;
  title: string;
  status: string;
  priority: string;
  version: number;
}

const dashboard = gql`
  query Dashboard($org: ID!) {
    me {
      userId
      orgs(first: 10) {
        nodes { orgId name role }
      }
    }
    org(id: $org) {
      name
      teams(first: 10) {
        nodes { id name memberCount }
      }
      tickets(first: 5) {
        edges {
          cursor
          node { id title status priority requester { name } assignee { name } }
        }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

const ticketPage = gql`
  query TicketPage($org: ID!, $after: String) {
    org(id: $org) {
      tickets(first: 2, after: $after, order: ASC) {
        edges { cursor node { id title status priority version } }
        nodes { id }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

async function main(): Promise<void> {
  const baseUrl = env("BASE_URL");
  const token = env("TOKEN_ALICE");
  const rest = createTenantdClient(baseUrl, token);
  const client = new GraphQLClient(`${baseUrl}/v1/graphql`, { headers: { Authorization: `Bearer ${token}` } });

  const { orgId, titles } = await step("set up an org with a team and 5 tickets (REST)", async () => {
    const org = await rest.POST("/v1/orgs", { body: { name: `GraphQL ${new Date().toISOString()}` } });
    ok(org.data !== undefined, `createOrg: ${org.response.status}`);
    const team = await rest.POST("/v1/orgs/{orgId}/teams", { params: { path: { orgId: org.data.id } }, body: { name: "Support" } });
    ok(team.data !== undefined, `createTeam: ${team.response.status}`);
    const titles: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const title = `printer ${i}`;
      const t = await rest.POST("/v1/orgs/{orgId}/tickets", { params: { path: { orgId: org.data.id } }, body: { title, teamId: team.data.id } });
      ok(t.data !== undefined, `createTicket ${i}: ${t.response.status}`);
      titles.push(title);
    }
    return { orgId: org.data.id, titles };
  });

  await step("the dashboard query", async () => {
    const d = await client.request<{
      me: { userId: string; orgs: { nodes: { orgId: string; name: string; role: string }[] } };
      org: { name: string; teams: { nodes: { name: string; memberCount: number }[] }; tickets: { edges: { cursor: string; node: TicketNode }[]; pageInfo: PageInfo } };
    }>(dashboard, { org: orgId });
    ok(d.me.userId === "u_alice", `me.userId ${show(d.me.userId)}`);
    ok(d.me.orgs.nodes.some((o) => o.orgId === orgId && o.role === "OWNER"), `me.orgs lacks the org as OWNER: ${show(d.me.orgs)}`);
    ok(d.org.teams.nodes.length === 1 && d.org.teams.nodes[0]?.memberCount === 1, `teams ${show(d.org.teams)}`);
    const t = d.org.tickets;
    ok(t.edges.length === 5 && t.edges.every((e) => e.node.status === "NEW" && e.node.priority === "NORMAL" && e.cursor.length > 0), `tickets ${show(t.edges)}`);
    ok(!t.pageInfo.hasNextPage && !t.pageInfo.hasPreviousPage && t.pageInfo.endCursor === t.edges[4]?.cursor, `pageInfo ${show(t.pageInfo)}`);
  });

  const tickets = await step("forward pagination through edges to the end", async () => {
    const seen: TicketNode[] = [];
    let after: string | null = null;
    for (let pages = 1; ; pages++) {
      ok(pages <= 5, "the listing never ended");
      const d: { org: { tickets: { edges: { cursor: string; node: TicketNode }[]; nodes: { id: string }[]; pageInfo: PageInfo } } } = await client.request(ticketPage, { org: orgId, after });
      const c = d.org.tickets;
      ok(show(c.nodes.map((n) => n.id)) === show(c.edges.map((e) => e.node.id)), `nodes and edges differ: ${show(c)}`);
      ok(c.pageInfo.startCursor === (c.edges[0]?.cursor ?? null) && c.pageInfo.endCursor === (c.edges.at(-1)?.cursor ?? null), `pageInfo ${show(c.pageInfo)}`);
      seen.push(...c.edges.map((e) => e.node));
      if (!c.pageInfo.hasNextPage) {
        break;
      }
      after = c.pageInfo.endCursor;
    }
    ok(show(seen.map((t) => t.title)) === show(titles), `paged through ${show(seen.map((t) => t.title))}, want ${show(titles)} (oldest first)`);
    return seen;
  });

  const first = tickets[0];
  ok(first !== undefined, "no ticket");
  await step("createTicket, updateTicket, addComment", async () => {
    const key = randomUUID();
    const created = await client.request<{ createTicket: TicketNode | null }>(
      gql`mutation Create($org: ID!, $in: CreateTicketInput!, $key: String) { createTicket(orgId: $org, input: $in, idempotencyKey: $key) { id title status priority version } }`,
      { org: orgId, in: { title: "by graphql-request", priority: "HIGH" }, key },
    );
    ok(created.createTicket?.priority === "HIGH" && created.createTicket.version === 1, `createTicket ${show(created)}`);
    const updated = await client.request<{ updateTicket: TicketNode | null }>(
      gql`mutation Update($org: ID!, $id: ID!, $v: Int) { updateTicket(orgId: $org, id: $id, expectedVersion: $v, input: { status: OPEN }) { id status version } }`,
      { org: orgId, id: first.id, v: first.version },
    );
    ok(updated.updateTicket?.status === "OPEN" && updated.updateTicket.version === first.version + 1, `updateTicket ${show(updated)}`);
    const commented = await client.request<{ addComment: { id: string; body: string } | null }>(
      gql`mutation Comment($org: ID!, $t: ID!) { addComment(orgId: $org, ticketId: $t, body: "on it") { id body } }`,
      { org: orgId, t: first.id },
    );
    ok(commented.addComment?.body === "on it", `addComment ${show(commented)}`);
    const d = await client.request<{ org: { ticket: { comments: { totalCount: number; edges: { node: { body: string } }[] } } } }>(
      gql`query Comments($org: ID!, $t: ID!) { org(id: $org) { ticket(id: $t) { comments { totalCount edges { node { body } } } } } }`,
      { org: orgId, t: first.id },
    );
    ok(d.org.ticket.comments.totalCount === 1 && d.org.ticket.comments.edges[0]?.node.body === "on it", `comments ${show(d)}`);
  });

  await step("an error carries its extensions.code (a stale expectedVersion)", async () => {
    try {
      await client.request(
        gql`mutation Stale($org: ID!, $id: ID!) { updateTicket(orgId: $org, id: $id, expectedVersion: 1, input: { priority: LOW }) { id } }`,
        { org: orgId, id: first.id },
      );
    } catch (err) {
      ok(err instanceof ClientError, `not a ClientError: ${String(err)}`);
      const codes = err.response.errors?.map((e) => e.extensions?.["code"]);
      ok(show(codes) === show(["version_mismatch"]), `codes ${show(codes)}, want ["version_mismatch"]`);
      return;
    }
    throw new FlowError("a stale expectedVersion was accepted");
  });

  await step("a query over GET (graphql-request's GET mode)", async () => {
    const viaGet = new GraphQLClient(`${baseUrl}/v1/graphql`, { method: "GET", headers: { Authorization: `Bearer ${token}` } });
    const d = await viaGet.request<{ org: { name: string; tickets: { edges: unknown[] } } }>(
      gql`query ViaGet($org: ID!) { org(id: $org) { name tickets(first: 3) { edges { cursor } } } }`,
      { org: orgId },
    );
    ok(d.org.name.startsWith("GraphQL ") && d.org.tickets.edges.length === 3, `GET: ${show(d)}`);
  });

  await step("an automatic persisted query over GET, by hash once the server knows it", async () => {
    const query = "query PersistedOrg($org: ID!) { org(id: $org) { name } }";
    const sha256Hash = createHash("sha256").update(query).digest("hex");
    type Answer = { data?: { org?: { name: string } }; errors?: { extensions?: { code?: string } }[] };
    const get = async (params: Record<string, string>): Promise<{ status: number; vary: string | null; body: Answer }> => {
      const url = new URL(`${baseUrl}/v1/graphql`);
      for (const [k, v] of Object.entries(params)) {
        url.searchParams.set(k, v);
      }
      const res = await fetch(url, { headers: { Authorization: `Bearer ${token}`, Accept: "application/graphql-response+json" } });
      return { status: res.status, vary: res.headers.get("Vary"), body: (await res.json()) as Answer };
    };
    const params = { extensions: JSON.stringify({ persistedQuery: { version: 1, sha256Hash } }), variables: JSON.stringify({ org: orgId }) };
    const unknown = await get(params);
    ok(unknown.status === 400 && unknown.body.errors?.[0]?.extensions?.code === "PERSISTED_QUERY_NOT_FOUND" && unknown.body.data === undefined, `an unknown hash: ${show(unknown)}`);
    const registered = await get({ ...params, query });
    ok(registered.status === 200 && registered.body.data?.org?.name.startsWith("GraphQL ") === true, `the query with its hash: ${show(registered)}`);
    const byHash = await get(params);
    ok(byHash.status === 200 && show(byHash.body) === show(registered.body) && byHash.vary === "Accept", `the hash alone: ${show(byHash)}`);
  });

  await step("a mutation over GET is refused 405, Allow: POST", async () => {
    const url = new URL(`${baseUrl}/v1/graphql`);
    url.searchParams.set("query", `mutation { addComment(orgId: "${orgId}", ticketId: "${first.id}", body: "over GET") { id } }`);
    const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
    ok(res.status === 405 && res.headers.get("Allow") === "POST", `GET mutation: ${res.status} Allow ${show(res.headers.get("Allow"))}`);
  });
}

main().then(
  () => {
    console.log(`graphql: ${passed} passed, 0 failed`);
  },
  (err: unknown) => {
    console.error(err instanceof FlowError ? `graphql: ${err.message}` : err);
    console.log(`graphql: ${passed} passed, 1 failed`);
    process.exit(1);
  },
);
