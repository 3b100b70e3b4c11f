// The GraphQL over HTTP specification's audit suite (graphql-http's
// serverAudits) against a running tenantd server, as Alice:
//
//   BASE_URL=http://127.0.0.1:8080 TOKEN_ALICE=<jwt> npm run audit
//
// It prints every audit that is not ok and a summary line
// `audit: <ok> ok, <notice> notice, <warn> warn, <error> error`, and exits 1
// on any warning or error (a failed MUST or SHOULD). Notices (a MAY the
// server does not do) are listed, and explained in the README.
import { serverAudits } from "graphql-http";

const baseUrl = process.env["BASE_URL"]?.trim();
const token = process.env["TOKEN_ALICE"]?.trim();
if (!baseUrl || !token) {
  console.error("audit: BASE_URL and TOKEN_ALICE must be set");
  process.exit(1);
}

const authorized: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

const results = await Promise.all(serverAudits({ url: `${baseUrl}/v1/graphql`, fetchFn: authorized }).map((a) => a.fn()));
const counts = { ok: 0, notice: 0, warn: 0, error: 0 };
for (const r of results) {
  counts[r.status]++;
  if (r.status !== "ok") {
    console.log(`${r.status} ${r.id} ${r.name}: ${r.reason}`);
  }
}
console.log(`audit: ${counts.ok} ok, ${counts.notice} notice, ${counts.warn} warn, ${counts.error} error`);
process.exit(counts.warn + counts.error > 0 ? 1 : 0);
