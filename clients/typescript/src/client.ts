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

/** One line of an org's export (`GET /v1/orgs/{orgId}/export`, `exportOrg`). */
export type ExportLine = Schemas["ExportLine"];

/** An export that could not be read to its summary. */
export class ExportFailed extends Error {
  constructor(
    message: string,
    /** The HTTP status of a refused request (403, 404, 400...), or of the last error line. */
    readonly status: number,
    /** The problem the server answered, or what ended the last download. */
    readonly problem?: unknown,
  ) {
    super(message);
  }
}

/**
 * Streams an org's export (owners only), one parsed line at a time, as the
 * server sends them: the org's objects, then the summary, which is the last.
 * A download that breaks, or ends with an `error` line (the database
 * unavailable, the org's rate limit spent), is resumed right after the last
 * line received, up to `retries` times (default 3); pass `cursor` to resume
 * an export a previous run began. A refused request (403, 404, a bad
 * cursor's 400) throws ExportFailed at once.
 */
export async function* exportOrg(
  api: TenantdClient,
  orgId: string,
  opts: { cursor?: string; retries?: number } = {},
): AsyncGenerator<ExportLine, void, undefined> {
  let cursor = opts.cursor;
  let retries = opts.retries ?? 3;
  for (;;) {
    const res = await api.GET("/v1/orgs/{orgId}/export", {
      params: { path: { orgId }, query: cursor === undefined ? {} : { cursor } },
      parseAs: "stream",
    });
    if (!res.data) {
      throw new ExportFailed(`exportOrg: ${res.response.status}`, res.response.status, res.error);
    }
    let failure: unknown = new Error("the export ended without its summary");
    let status = res.response.status;
    try {
      for await (const text of ndjsonLines(res.data)) {
        const line = JSON.parse(text) as ExportLine;
        if (line.type === "error") {
          failure = line.error;
          status = line.error.status;
          break;
        }
        yield line;
        if (line.type === "summary") {
          return;
        }
        cursor = line.cursor;
      }
    } catch (err) {
      failure = err; // the connection broke
    }
    if (retries-- <= 0) {
      throw new ExportFailed("exportOrg: the export failed and could not be resumed", status, failure);
    }
  }
}

/** The lines of an NDJSON stream; a last line without its newline was cut, and is dropped. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let rest = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        return;
      }
      rest += decoder.decode(value, { stream: true });
      for (let i = rest.indexOf("\n"); i >= 0; i = rest.indexOf("\n")) {
        const line = rest.slice(0, i);
        rest = rest.slice(i + 1);
        if (line !== "") {
          yield line;
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}
