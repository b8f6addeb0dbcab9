#!/usr/bin/env node
/**
 * Fixes in the `postgres` driver (3.4.9, the latest release) for connections
 * that are reset while queries use them. Run by `npm ci` / `npm install`
 * (the `postinstall` script of package.json); safe to run again.
 *
 * Each fix is an exact text replacement, in the ESM build (src/) and the
 * CommonJS build (cjs/src/), which are the same code. A replacement whose
 * original text is missing and that was not applied before stops the
 * install: a new driver release must be looked at, not patched blindly.
 *
 * What goes wrong without them (seen through a TCP proxy that cuts the
 * connections to PostgreSQL):
 *
 * 1. `closed()` cancels the pending write timer but leaves it set, with its
 *    data. Every later small write (the next start-up message, the next
 *    query) waits for a timer that never fires: the reconnected connection
 *    sends nothing and its queries stay queued. And the stale data is sent
 *    ahead of the next connection's start-up message.
 * 2. A transaction (`sql.begin`) or reserved connection (`sql.reserve`)
 *    whose connection closes goes on sending its statements to it. With no
 *    socket, the delayed write throws `TypeError: Cannot read properties of
 *    null (reading 'write')` from a timer: an uncaught exception that ends
 *    the process. If the pool has meanwhile reconnected that connection for
 *    another query, the rest of the transaction runs on the new session,
 *    outside any transaction (autocommit), and a statement that was queued
 *    when the connection opened is resolved by the new session's first
 *    ReadyForQuery with no rows, as if it had run and found nothing.
 *    Statements the transaction had queued behind a busy connection were
 *    never settled.
 *
 * 3. A connection that fails while it loads the array types (its first
 *    query after start-up; a reset, or the server's shutdown message)
 *    rejects a promise that nothing awaits: the process ends with an
 *    unhandled rejection. And an error response of a session that then
 *    closed was kept, to fail the next session's first query.
 * 4. A reserved connection released after it closed went back to the pool
 *    without a socket: every later query hung.
 * 5. A link that stops answering (a blackhole: the socket stays open, nothing
 *    comes back) leaves the statements on it waiting for ever; TCP
 *    keep-alive never notices a peer whose kernel still acknowledges, a
 *    proxy's say.
 *
 * 6. The pool's queues (`Queue` in queue.js) never drop the slots `shift()`
 *    has emptied while the queue is not empty: under steady load the busy
 *    queue is shifted and pushed once per query and never drains, so its
 *    array grows by one slot per query, and `remove()`, called each time a
 *    connection changes queue, scans every dead slot with `indexOf`: CPU
 *    per query grows with the number of queries since the pool was last
 *    idle (6 % of the server's busy time after a minute of `make bench`),
 *    and memory with it.
 *
 * 7. Each execution of a prepared statement builds its cache key anew as
 *    `types + text`: a new string every time, so the statement cache's
 *    lookup hashes the whole SQL text again (5 % of the server's busy time
 *    for a 2 KB statement under `make bench`). Not a fault, a cost.
 *
 * 8. A prepared statement that fails because the session does not know it
 *    (`prepared statement "…" does not exist`, 26000: a transaction-mode
 *    pooler such as PgBouncer gave the client another server session) is
 *    sent again, parsed anew, even inside a transaction. There the first
 *    failure has already aborted the transaction, so the retry can only
 *    fail, except for what PostgreSQL accepts in an aborted transaction
 *    (`COMMIT`, `ROLLBACK`, `ROLLBACK TO SAVEPOINT`): a retried `COMMIT`
 *    ends it with the command tag `ROLLBACK` and no error.
 *    `sql.begin()` resolved, the caller answered 201, and nothing was
 *    committed: the lost writes seen through PgBouncer.
 * 9. Whatever the cause, `sql.begin()` takes a `COMMIT` that the server
 *    answers with the command tag `ROLLBACK` (an aborted transaction, whose
 *    error someone caught) as success.
 * 11. `sql.begin()` reserves its connection in the `onexecute` callback of its
 *    `BEGIN`, which `execute()` calls only when the connection may take more
 *    statements at once (the socket took the write, fewer than `max_pipeline`
 *    in flight). Otherwise the connection is never reserved, and the server's
 *    answer to `BEGIN` fails the transaction with UNSAFE_TRANSACTION: always
 *    so with `max_pipeline: 0` (no pipelining, which a transaction-mode pooler
 *    needs, src/db/database.ts), and whenever the socket is backed up.
 * 10. `sql.begin()` runs its own `SAVEPOINT`, `ROLLBACK [TO]` and `COMMIT` as
 *    named prepared statements, which buys nothing (they take no parameter)
 *    and exposes them to 8: a `ROLLBACK` that fails for want of its prepared
 *    statement leaves the transaction open and its connection reserved for
 *    ever, and the pool starves.
 *
 * The fixes: a connection without a socket refuses to execute (the query
 * fails with CONNECTION_CLOSED); the write and error state is cleared when
 * the socket closes or the connection terminates; a delayed write with no
 * socket is dropped; a transaction or reserved connection whose connection
 * closed fails its queued and later statements with the close error, and is
 * not handed back to the pool; a failed array-type load is left to the
 * connection's own close; a queue searches only its live slots and compacts
 * the dead ones once they are half of it. A failed statement is retried only
 * outside a transaction (the server reports the session idle); inside one, it
 * fails with the server's error and is parsed anew the next time it runs.
 * The transaction's own statements go as simple queries, and its `BEGIN`
 * always reserves the connection. A `COMMIT`
 * answered `ROLLBACK` rejects `sql.begin()` with COMMIT_ROLLED_BACK. A
 * statement's cache key is made once per (parameter types, text) and reused,
 * so its hash is computed once. And one option, `stall_timeout` (seconds, off
 * by default): a connection awaiting an answer that receives nothing for that
 * long is destroyed, which fails its statements with CONNECTION_CLOSED. Only
 * silence while an answer is due counts: an idle connection is left alone,
 * and the driver's own data handler sees through TLS.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'orders-service patch';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');

/** [file under src/ and cjs/src/, original text, replacement]. */
export const FIXES = [
  [
    'connection.js',
    `    , statements = {}
    , statementId`,
    `    , statements = {}
    , signatures = new Map() // ${MARK}: see signatureOf
    , statementId`,
  ],
  [
    'connection.js',
    `  function build(q) {
    const parameters = []`,
    `  // ${MARK}: one cache key string per (parameter types, text), so that the
  // statements lookup reuses its hash instead of hashing the SQL every time.
  function signatureOf(types, string) {
    const key = types.join(',')
    let byTypes = signatures.get(string)
    if (byTypes === undefined) {
      signatures.size >= 1000 && signatures.clear()
      signatures.set(string, byTypes = new Map())
    }
    let signature = byTypes.get(key)
    signature === undefined && byTypes.set(key, signature = key + string)
    return signature
  }

  function build(q) {
    const parameters = []`,
  ],
  [
    'connection.js',
    `    q.signature = q.prepare && types + string`,
    `    q.signature = q.prepare && signatureOf(types, string) // ${MARK}`,
  ],
  [
    'queue.js',
    `    remove: (x) => {
      const index = xs.indexOf(x)
      return index === -1
        ? null
        : (xs.splice(index, 1), x)
    },`,
    `    remove: (x) => { // ${MARK}: only the live slots, and compacted
      const at = xs.indexOf(x, index)
      if (at === -1)
        return null
      xs.splice(at, 1)
      if (index === xs.length) {
        index = 0
        xs = []
      }
      return x
    },`,
  ],
  [
    'queue.js',
    `      } else {
        xs[index - 1] = undefined
      }`,
    `      } else {
        xs[index - 1] = undefined
        if (index >= 64 && index * 2 >= xs.length) { // ${MARK}: drop the dead slots
          xs = xs.slice(index)
          index = 0
        }
      }`,
  ],
  // 2: a connection with no socket has no session to run a query in.
  [
    'connection.js',
    `      return queryError(q, Errors.connection('CONNECTION_DESTROYED', options))

    if (stream)`,
    `      return queryError(q, Errors.connection('CONNECTION_DESTROYED', options))

    if (!socket) // ${MARK}: closed, or not yet connected
      return queryError(q, Errors.connection('CONNECTION_CLOSED', options))

    if (stream)`,
  ],
  // 2: the crash site: a delayed write after the socket went away.
  [
    'connection.js',
    `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`,
    `  function nextWrite(fn) {
    if (!socket) // ${MARK}: the socket closed before this delayed write
      return (chunk = nextWriteTimer = null, false)
    const x = socket.write(chunk, fn)`,
  ],
  // 1, 3, 5: the write, error and stall state dies with its socket.
  [
    'connection.js',
    `    clearImmediate(nextWriteTimer)
    if (socket) {`,
    `    clearImmediate(nextWriteTimer)
    chunk = nextWriteTimer = null // ${MARK}
    stallTimer && (clearTimeout(stallTimer), stallTimer = null)
    if (socket) {`,
  ],
  [
    'connection.js',
    `    clearImmediate(nextWriteTimer)
    socket.removeListener('data', data)`,
    `    clearImmediate(nextWriteTimer)
    chunk = nextWriteTimer = errorResponse = null // ${MARK}
    stallTimer && (clearTimeout(stallTimer), stallTimer = null)
    socket.removeListener('data', data)`,
  ],
  // 3: a failed type load is the connection's close, which fails its queries.
  ['connection.js', `        return fetchArrayTypes()`, `        return fetchArrayTypes().catch(noop) // ${MARK}`],
  // 5: the stall watch: started when a statement is sent, restarted by every
  // byte received while an answer is due, stopped when none is.
  [
    'connection.js',
    `    , nextWriteTimer = null
`,
    `    , nextWriteTimer = null
    , stallTimer = null // ${MARK}
`,
  ],
  [
    'connection.js',
    `      build(q)
      return write(toBuffer(q))`,
    `      build(q)
      watchStall() // ${MARK}
      return write(toBuffer(q))`,
  ],
  [
    'connection.js',
    `  function nextWrite(fn) {`,
    `  // ${MARK}: destroys a connection that hears nothing while an answer is due.
  function watchStall() {
    options.stall_timeout && !stallTimer && (stallTimer = setTimeout(stalled, options.stall_timeout * 1000))
  }

  function stalled() {
    stallTimer = null
    socket && socket.destroy()
  }

  function nextWrite(fn) {`,
  ],
  [
    'connection.js',
    `  function data(x) {
    if (incomings) {
      incomings.push(x)
      remaining -= x.length
      if (remaining > 0)
        return
    }`,
    `  function data(x) {
    stallTimer && (clearTimeout(stallTimer), stallTimer = null) // ${MARK}
    if (incomings) {
      incomings.push(x)
      remaining -= x.length
      if (remaining > 0)
        return watchStall() // ${MARK}: the rest of a message is due
    }`,
  ],
  [
    'connection.js',
    `      incoming = incoming.subarray(length + 1)
      remaining = 0
      incomings = null
    }
  }`,
    `      incoming = incoming.subarray(length + 1)
      remaining = 0
      incomings = null
    }
    ;(query || sent.length || incomings) && watchStall() // ${MARK}
  }`,
  ],
  [
    'index.js',
    `    socket          : o.socket,`,
    `    socket          : o.socket,
    stall_timeout   : o.stall_timeout || 0, // ${MARK}`,
  ],
  // 8: a retry only where it can succeed: outside a transaction (ReadyForQuery's status byte 'I').
  [
    'connection.js',
    `          : query.prepared && retryRoutines.has(errorResponse.routine)
            ? retry(query, errorResponse)`,
    `          : query.prepared && retryRoutines.has(errorResponse.routine)
            ? x[5] === 73 // ${MARK}: idle; in a transaction, fail, and parse it anew next time
              ? retry(query, errorResponse)
              : (delete statements[query.signature], errored(errorResponse))`,
  ],
  // 9: a COMMIT that rolled back is a failure.
  [
    'index.js',
    `        prepare
          ? await sql\`prepare transaction '\${ sql.unsafe(prepare) }'\`
          : await sql\`commit\``,
    `        prepare
          ? await sql\`prepare transaction '\${ sql.unsafe(prepare) }'\`
          : (await sql\`commit\`.simple()).command === 'COMMIT' || rolledBack() // ${MARK}`,
  ],
  // 11: a BEGIN reserves its connection whatever the pipeline's state.
  [
    'connection.js',
    `        && sent.length < max_pipeline
        && (!q.options.onexecute || q.options.onexecute(connection))`,
    `        && sent.length < max_pipeline
        && !q.options.onexecute
        || (q.options.onexecute && q.options.onexecute(connection), false) // ${MARK}: sql.begin's, in any case`,
  ],
  // 10: the transaction's own statements are never prepared.
  [
    'index.js',
    `      name && await sql\`savepoint \${ sql(name) }\``,
    `      name && await sql\`savepoint \${ sql(name) }\`.simple() // ${MARK}`,
  ],
  [
    'index.js',
    `          ? sql\`rollback to \${ sql(name) }\`
          : sql\`rollback\``,
    `          ? sql\`rollback to \${ sql(name) }\`.simple() // ${MARK}
          : sql\`rollback\`.simple()`,
  ],
  [
    'index.js',
    `      return result

      function savepoint(name, fn) {`,
    `      return result

      function rolledBack() { // ${MARK}: the server ended an aborted transaction
        throw Errors.generic('COMMIT_ROLLED_BACK',
          'COMMIT was answered with ROLLBACK: the transaction had failed, nothing was committed')
      }

      function savepoint(name, fn) {`,
  ],
  // 2: nothing of the old session may be resolved by the next one.
  [
    'connection.js',
    `    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))`,
    `    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))
    query = null // ${MARK}: rejected above or by the 'error' event`,
  ],
  // 2: a transaction ends with its connection.
  [
    'index.js',
    `      , connection
      , prepare = null
`,
    `      , connection
      , prepare = null
      , closedError = null // ${MARK}
`,
  ],
  [
    'index.js',
    `        new Promise((_, reject) => connection.onclose = reject)`,
    `        new Promise((_, reject) => connection.onclose = e => { // ${MARK}
          closedError = e
          while (queries.length) queries.shift().reject(e)
          reject(e)
        })`,
  ],
  [
    'index.js',
    `        q.catch(e => uncaughtError || (uncaughtError = e))
        c.queue === full`,
    `        q.catch(e => uncaughtError || (uncaughtError = e))
        if (closedError) // ${MARK}
          return q.reject(closedError)
        c.queue === full`,
  ],
  // 2: so does a reserved connection.
  [
    'index.js',
    `    move(c, reserved)
    c.reserved = () => queue.length`,
    `    move(c, reserved)
    let closedError = null // ${MARK}
    c.onclose = e => {
      closedError = e
      while (queue.length) queue.shift().reject(e)
    }
    c.reserved = () => queue.length`,
  ],
  // 4: nor is it handed back to the pool.
  [
    'index.js',
    `    sql.release = () => {
      c.reserved = null`,
    `    sql.release = () => {
      if (closedError) // ${MARK}: closed; the pool has it back already
        return
      c.reserved = null`,
  ],
  [
    'index.js',
    `    function handler(q) {
      c.queue === full
        ? queue.push(q)`,
    `    function handler(q) {
      if (closedError) // ${MARK}
        return q.reject(closedError)
      c.queue === full
        ? queue.push(q)`,
  ],
];

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) apply();

function apply() {
  let applied = 0;
  for (const build of ['src', join('cjs', 'src')]) {
    const texts = new Map();
    const read = (file) => texts.get(file) ?? texts.set(file, readFileSync(join(root, build, file), 'utf8')).get(file);
    for (const [file, original, replacement] of FIXES) {
      const text = read(file);
      if (text.includes(replacement)) continue;
      const at = text.indexOf(original);
      if (at === -1 || text.indexOf(original, at + 1) !== -1) {
        process.stderr.write(
          `patch-postgres: ${build}/${file} does not contain exactly one copy of:\n${original}\n` +
            'The postgres driver changed; review scripts/patch-postgres.mjs against it.\n',
        );
        process.exit(1);
      }
      texts.set(file, text.slice(0, at) + replacement + text.slice(at + original.length));
      applied += 1;
    }
    for (const [file, text] of texts) writeFileSync(join(root, build, file), text);
  }
  if (applied > 0) process.stdout.write(`patch-postgres: ${applied} fixes applied to node_modules/postgres\n`);
}
