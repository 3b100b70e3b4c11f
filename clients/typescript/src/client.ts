// The tenantd API client: openapi-fetch over the types that openapi-typescript
// generates from ../../openapi.yaml into schema.d.ts (`npm run generate`).
import createClient, { type Client, type Middleware } from "openapi-fetch";

import type { components, paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** A typed client for every path of openapi.yaml. */
export type TenantdClient = Client<paths>;

/** Schemas of openapi.yaml, e.g. `Schemas["Ticket"]`. */
export type Schemas = components["schemas"];

/** An RFC 9457 problem, the body of every error response. */
export type Problem = Schemas["Problem"];

/**
 * Returns a middleware that sends `Authorization: Bearer <token>` on every
 * request. `token` may be a function, to pick up refreshed tokens.
 */
export function bearerAuth(token: string | (() => string | Promise<string>)): Middleware {
  return {
    async onRequest({ request }) {
      const value = typeof token === "function" ? await token() : token;
      request.headers.set("Authorization", `Bearer ${value}`);
      return request;
    },
  };
}

/**
 * Creates a client for the tenantd API at `baseUrl` (e.g.
 * `http://127.0.0.1:8080`) that authenticates with the bearer `token`.
 */
export function createTenantdClient(
  baseUrl: string,
  token: string | (() => string | Promise<string>),
): TenantdClient {
  const client = createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ""),
    // openapi.yaml declares `expand` as style=form, explode=false:
    // expand=requester,assignee.
    querySerializer: { array: { style: "form", explode: false } },
  });
  client.use(bearerAuth(token));
  return client;
}

/** Reports whether `body` looks like an RFC 9457 problem of tenantd. */
export function isProblem(body: unknown): body is Problem {
  return (
    typeof body === "object" &&
    body !== null &&
    typeof (body as { code?: unknown }).code === "string" &&
    typeof (body as { status?: unknown }).status === "number"
  );
}
