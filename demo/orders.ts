// `npm run demo:orders`: the end-to-end connectors example (see demo/ordersJob.ts and README "Connectors"): orders
// from NATS JetStream, per-customer totals per minute of event time, enriched from PostgreSQL, written to PostgreSQL
// exactly once. Needs NATS JetStream (127.0.0.1:4222, or WEIR_DEMO_NATS) and PostgreSQL (the loopback `test`
// database, or WEIR_DEMO_POSTGRES); it removes the stream and schema it makes.
import { runOrdersDemo } from './ordersJob';

const { orders, rows } = await runOrdersDemo({
  nats: process.env.WEIR_DEMO_NATS,
  postgres: process.env.WEIR_DEMO_POSTGRES,
  log: (line) => console.log(`• ${line}`),
});
console.log(`\n${orders.length} orders became ${rows.length} rows of minute_totals; the first minutes:\n`);
console.table(rows.slice(0, 12).map((row) => ({ ...row, total: (row.total / 100).toFixed(2) })));
