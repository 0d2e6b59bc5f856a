// The real @trpc/client (v11) with the superjson transformer, against a server whose URL is the first argument:
// a query, a call with no input, a mutation, an error and a batch. Prints what the client made of each, as JSON.
import { createTRPCClient, httpBatchLink, httpLink } from "@trpc/client";
import superjson from "superjson";

const url = process.argv[2];
const single = createTRPCClient({ links: [httpLink({ url, transformer: superjson })] });
const batched = createTRPCClient({ links: [httpBatchLink({ url, transformer: superjson })] });

const failure = async (call) => {
  try {
    await call();
    return null;
  } catch (error) {
    return { name: error.name, message: error.message, data: error.data, code: error.shape?.code };
  }
};
const dated = (result) => ({ ...result, at: result.at instanceof Date ? result.at.toISOString() : "not a Date" });

const hello = await single.greeting.hello.query({ name: "Ada" });
const later = await single.events.since.query({ since: new Date("2026-11-25T06:30:15.123Z") });
const seen = [];
const requests = (input, init) => {
  seen.push(String(input));
  return fetch(input, init);
};
const counting = createTRPCClient({ links: [httpBatchLink({ url, transformer: superjson, fetch: requests })] });
const batch = await Promise.all([
  counting.greeting.hello.query({ name: "a" }),
  counting.clock.now.query(),
  counting.greeting.hello.query({ name: "c", shout: true }),
]);
const mixed = await Promise.allSettled([batched.clock.now.query(), batched.vault.open.query()]);

console.log(
  JSON.stringify({
    query: dated(hello),
    noInput: dated(await single.clock.now.query()),
    dateInput: { since: later.since.toISOString(), later: later.later.map((d) => d.toISOString()) },
    mutation: await single.counter.add.mutate({ by: 3 }),
    error: await failure(() => single.vault.open.query()),
    rateLimited: await failure(() => single.limits.hit.mutate()),
    invalid: await failure(() => single.greeting.hello.query({ name: "" })),
    batch: batch.map(dated),
    batchRequests: seen.length,
    batchUrl: seen[0],
    mixed: mixed.map((settled) => settled.status),
  }),
);
