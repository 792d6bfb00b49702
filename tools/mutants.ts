/**
 * The mutants `deno task mutate` (tools/mutate.ts) plants, one at a time, in a scratch copy
 * of the kit: each is a deliberate bug that a test must catch. One search/replace in one file —
 * a `lib/`, `cli/` or `tools/` module, or the migration holding the latest definition of an SQL
 * function (`fn` names it; the check refuses a mutant whose file is no longer the latest, as
 * a released migration's function is redefined in a new one) — and the test files that should
 * kill it. The search text must occur exactly once.
 *
 * Add a mutant with every guard that matters (a safety property, a limit, a capability), and
 * name the tests that are meant to catch it: a mutant that survives is a missing test.
 *
 * @module
 */

/** One deliberate bug. */
export interface Mutant {
  /** A short name (kebab case) for the report and `--only`. */
  name: string;
  /** What the bug does, in words. */
  bug: string;
  /** The file it is planted in, relative to the kit root. */
  file: string;
  /** The SQL function whose latest definition `file` must hold (SQL mutants). */
  fn?: string;
  /** The exact text replaced (must occur once in `file`). */
  search: string;
  /** What it is replaced with. */
  replace: string;
  /** The test files that should catch it, relative to the kit root. */
  tests: string[];
}

/** An SQL function's mutant target: its source file (supabase/schemas/functions/<area>/<name>.sql). */
const fn = (area: string, name: string): { file: string; fn: string } => ({
  file: `supabase/schemas/functions/${area}/${name}.sql`,
  fn: name,
});

/** The list; see the module documentation. */
export const MUTANTS: readonly Mutant[] = [
  // --- the three the audit of issue 29 found surviving --------------------------------------
  {
    name: 'prune-picks-open-runs',
    bug: 'prune also deletes started runs whose started_at is past the cutoff',
    ...fn('maintenance', 'prune'),
    search: `           where r.status in ('completed', 'failed', 'cancelled')
             and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < cutoff`,
    replace: `           where (r.status in ('completed', 'failed', 'cancelled')
             and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < cutoff)
              or (r.status = 'started' and r.started_at < cutoff)`,
    tests: ['tests/sql/prune_test.ts'],
  },
  {
    name: 'poller-keeps-messages-read-after-stop',
    bug: 'messages read after a stop request stay hidden until their visibility timeout',
    file: 'lib/worker/poller.ts',
    search: '        await q.releaseMessages(o.queueName, ids);\n',
    replace: '',
    tests: ['tests/worker/engine_test.ts'],
  },
  {
    name: 'stop-leaves-handler-pool-open',
    bug: "stopping a worker does not close the handlers' ctx.sql pool",
    file: 'lib/worker/worker.ts',
    search: '      await resources.close();\n',
    replace: '',
    tests: ['tests/dsl/context_test.ts'],
  },
  // --- the claim -----------------------------------------------------------------------------
  {
    name: 'claim-ignores-supported-pairs',
    bug: 'the claim treats every pair of the batch as supported, not the registered set',
    ...fn('claim', 'claim_batch'),
    search: `  support := case when supported_pairs is null then worker.pair_set
                  else switchyard.pair_set(supported_pairs) end;`,
    replace:
      `  support := (select switchyard.pair_set(coalesce(array_agg(t.flow_slug || '/' || t.step_slug), '{}'))
                from switchyard.step_tasks t
               where t.queue_name = queue and t.message_id = any (message_ids));`,
    tests: ['tests/worker/shared_queues_test.ts', 'tests/dsl/map_test.ts'],
  },
  {
    name: 'unsupported-batch-uses-attempts',
    bug: 'a refused (unsupported) batch still counts an attempt on its tasks',
    ...fn('claim', 'claim_batch'),
    search: '    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing\n',
    replace: `    update switchyard.step_tasks t set attempts_count = t.attempts_count + 1
     where t.queue_name = queue and t.message_id = any (message_ids);
    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing\n`,
    tests: ['tests/worker/shared_queues_test.ts', 'tests/sql/hostile_test.ts'],
  },
  {
    name: 'unsupported-pause-not-persisted',
    bug: 'a refused batch does not pause the queue function',
    ...fn('claim', 'claim_batch'),
    search: '     where wf.function_name = worker.function_name and wf.paused_at is null;\n',
    replace: '     where false;\n',
    tests: ['tests/sql/hostile_test.ts', 'tests/worker/shared_queues_test.ts'],
  },
  // --- completion, failure, recovery ---------------------------------------------------------
  {
    name: 'late-completion-accepted',
    bug: 'a completion from a superseded attempt is accepted',
    ...fn('completion', 'complete_tasks'),
    search: "   where x.status = 'started' and x.attempts_count = x.attempt;\n",
    replace: "   where x.status = 'started';\n",
    tests: ['tests/sql/sql_core_test.ts', 'tests/worker/races_test.ts'],
  },
  {
    name: 'retry-backoff-constant',
    bug: 'every retry waits baseDelay instead of doubling',
    ...fn('completion', 'fail_task_with'),
    search: '(1::bigint << least(task.attempts_count - 1, 40))',
    replace: '(1::bigint << least(task.attempts_count - 1, 0))',
    tests: ['tests/sql/sql_core_test.ts', 'tests/worker/engine_test.ts'],
  },
  {
    name: 'stall-recovery-takes-live-tasks',
    bug: 'stall recovery re-queues the started tasks of a live, heart-beating worker',
    ...fn('maintenance', 'recover_stalled'),
    search: '            or w.worker_id is null\n',
    replace: '            or w.worker_id is not null\n',
    tests: ['tests/worker/engine_test.ts', 'tests/sql/sql_core_test.ts'],
  },
  // --- the handler context -------------------------------------------------------------------
  {
    name: 'timeout-does-not-abort-signal',
    bug: "a step's timeout fails the attempt without aborting ctx.signal",
    file: 'lib/worker/executor.ts',
    search: '          this.#abort(controller, e);\n          reject(e);\n',
    replace: '          reject(e);\n',
    tests: ['tests/dsl/context_test.ts', 'tests/sql/hostile_test.ts'],
  },
  // --- inputs and limits ---------------------------------------------------------------------
  {
    name: 'nul-accepted',
    bug: 'strings and property names holding U+0000 pass the JSON check',
    file: 'lib/dsl/json.ts',
    search: '  if (nul >= 0) {\n',
    replace: '  if (nul < -1) {\n',
    tests: ['tests/unit/dsl/dsl_test.ts', 'tests/sql/hostile_test.ts'],
  },
  {
    name: 'output-limit-unchecked',
    bug: 'the worker sends outputs over max_output_bytes instead of failing the attempt',
    file: 'lib/worker/executor.ts',
    search: '      if (size > max) {\n',
    replace: '      if (size < 0) {\n',
    tests: ['tests/sql/limits_test.ts'],
  },
  {
    name: 'map-element-limit-doubled',
    bug: 'a map accepts twice max_map_elements() elements',
    ...fn('runs', '_start_ready_steps'),
    search: '        if element_count > switchyard.max_map_elements() then\n',
    replace: '        if element_count > 2 * switchyard.max_map_elements() then\n',
    tests: ['tests/dsl/map_test.ts', 'tests/sql/limits_test.ts'],
  },
  // --- the DSL features ----------------------------------------------------------------------
  {
    name: 'map-aggregation-reversed',
    bug: "a map step's outputs are aggregated in reverse element order",
    ...fn('completion', 'complete_tasks'),
    search: '(select jsonb_agg(t.output order by t.task_index)\n',
    replace: '(select jsonb_agg(t.output order by t.task_index desc)\n',
    tests: ['tests/dsl/map_test.ts'],
  },
  {
    name: 'condition-ignored',
    bug: "a step's if/ifNot condition is never checked: the step always runs",
    ...fn('runs', '_start_ready_steps'),
    search: '        if not ((ready.cond_if is null or step_input @> ready.cond_if)\n',
    replace: '        if false and not ((ready.cond_if is null or step_input @> ready.cond_if)\n',
    tests: ['tests/dsl/conditions_test.ts'],
  },
  // --- cancellation --------------------------------------------------------------------------
  {
    // For a cancelled run this guard has a twin (cancel_run cancels the run's step states,
    // so none can complete); for a failed run it is the only one.
    name: 'ended-run-starts-successors',
    bug: "a task completing after its run failed (or was cancelled) starts the run's successors",
    ...fn('completion', 'complete_tasks'),
    search: '               where g.run_id = any (live_runs)\n',
    replace: '               where true\n',
    tests: ['tests/sql/ended_runs_test.ts'],
  },
  {
    name: 'cancel-leaves-queued-messages',
    bug: "cancel_run leaves the run's queued messages on their queues",
    ...fn('runs', 'cancel_run'),
    search: '  perform switchyard._archive_queued(run.run_id);\n',
    replace: '',
    tests: [
      'tests/sql/client_test.ts',
      'tests/sql/ended_runs_test.ts',
      'tests/ops/dashboard_api_test.ts',
    ],
  },
  // --- retention and schedules ---------------------------------------------------------------
  {
    name: 'prune-ignores-held-messages',
    bug: 'prune deletes a finished run whose message a worker still holds (hidden on its queue)',
    ...fn('maintenance', 'prune'),
    search: '         and not t.message_id = any (free);\n',
    replace: '         and false;\n',
    tests: ['tests/sql/prune_test.ts'],
  },
  {
    name: 'schedule-prune-drops-batch-size',
    bug: "schedule_prune's job ignores the batch size it was given",
    ...fn('maintenance', 'schedule_prune'),
    search: '    switchyard.prune_command(older_than, batch_size),\n',
    replace: '    switchyard.prune_command(older_than, 1000),\n',
    tests: ['tests/sql/prune_test.ts'],
  },
  {
    name: 'cancel-previous-before-start',
    bug: "cancel_previous cancels the open run outside the new tick's start, so a failed start " +
      'leaves no run (issue 36 item 7)',
    ...fn('schedules', '_start_schedule_run'),
    search: `  begin
    if replaces is not null then
      perform switchyard.cancel_run(replaces,
        format('schedule %s: replaced by the tick of %s', schedule_name, tick_at));
    end if;
`,
    replace: `  if replaces is not null then
    perform switchyard.cancel_run(replaces,
      format('schedule %s: replaced by the tick of %s', schedule_name, tick_at));
  end if;
  begin
`,
    tests: ['tests/sql/schedules_flow_control_hardening_test.ts'],
  },
  // --- flow control ----------------------------------------------------------------------------
  {
    name: 'retry-after-freezes-shared-limit',
    bug: "a RetryAfter drains its step's shared rate limit for all its seconds, not at most the " +
      "limit's period (issue 36 item 6)",
    ...fn('completion', 'fail_task_with'),
    search:
      'switchyard.clock_now() + make_interval(secs => least(retry_after_seconds, l.per_seconds)))',
    replace: 'switchyard.clock_now() + make_interval(secs => retry_after_seconds))',
    tests: ['tests/sql/schedules_flow_control_hardening_test.ts'],
  },
  {
    name: 'set-rate-limit-keeps-drain',
    bug: "set_rate_limit keeps a RetryAfter's drain, so an operator's raised limit waits it out " +
      '(issue 36 item 6)',
    ...fn('flow_control', 'set_rate_limit'),
    search: '         refilled_at = switchyard.clock_now(),\n',
    replace: '         refilled_at = greatest(l.refilled_at, switchyard.clock_now()),\n',
    tests: ['tests/sql/schedules_flow_control_hardening_test.ts'],
  },
  // --- versions and start-up -----------------------------------------------------------------
  {
    name: 'alias-moves-backwards',
    bug: 'a worker whose registry lacks the current target moves the alias back to its own',
    ...fn('flows', 'sync_alias'),
    search: '  elsif current_target = any (versions) then\n',
    replace: '  elsif true then\n',
    tests: ['tests/worker/shared_queues_test.ts', 'tests/worker/races_test.ts'],
  },
  {
    name: 'coverage-check-skipped',
    bug: 'a worker starts although its registry does not cover the work on its queue',
    file: 'lib/worker/worker.ts',
    search: '    if (gaps.length > 0) {\n',
    replace: '    if (gaps.length < 0) {\n',
    tests: ['tests/worker/shared_queues_test.ts'],
  },
  // --- callers -------------------------------------------------------------------------------
  {
    name: 'user-start-allow-list-ignored',
    bug: 'start_user_run starts any alias for a signed-in user',
    ...fn('runs', 'start_user_run'),
    search: '  if not exists (select 1 from switchyard.user_start_aliases a\n',
    replace: '  if false and not exists (select 1 from switchyard.user_start_aliases a\n',
    tests: ['tests/sql/sql_errors_test.ts', 'tests/sql/run_events_rls_test.ts'],
  },
  {
    name: 'user-signal-owner-ignored',
    bug: 'signal_user_run signals any run for a signed-in user, not only their own',
    ...fn('waits', 'signal_user_run'),
    search: '   where r.run_id = signal_user_run.run_id and r.owner = user_id;\n',
    replace: '   where r.run_id = signal_user_run.run_id;\n',
    tests: ['tests/sql/run_events_rls_test.ts'],
  },
  {
    name: 'cancel-locks-parent-first',
    bug: 'cancel_run locks the run before its children again, so a child ending deadlocks with it',
    ...fn('runs', 'cancel_run'),
    search: '  perform switchyard._lock_run_family(cancel_run.run_id);\n',
    replace: '',
    tests: ['tests/dsl/child_cancel_race_test.ts'],
  },
  {
    name: 'wait-ignores-notifications',
    bug: "a client's wait for a run ignores its notifications (only the deadline ends it)",
    file: 'lib/sql/client_queries.ts',
    search: "        wakeUp = () => done('woken');\n",
    replace: '        wakeUp = () => {};\n',
    tests: ['tests/sql/client_test.ts'],
  },
  // --- upgrades ------------------------------------------------------------------------------
  {
    name: 'release-hash-unchecked',
    bug: 'the release check accepts a released migration edited in place',
    file: 'tools/release_manifest.ts',
    search: '      if (now !== released) {\n',
    replace: '      if (now !== now) {\n',
    tests: ['tests/unit/tools/release_test.ts'],
  },
  {
    name: 'shape-compared-raw',
    bug:
      'ensure_flow compares the stored shape as stored: a key an older release did not know differs',
    ...fn('flows', 'ensure_flow'),
    search: '    existing_canonical := switchyard._canonical_shape(existing.shape);\n',
    replace: '    existing_canonical := existing.shape;\n',
    tests: ['tests/dsl/flow_options_test.ts'],
  },
  {
    name: 'runtime-options-are-shape',
    bug: 'ensure_flow refuses a change of runtime options only as a shape change (SY004)',
    ...fn('flows', 'ensure_flow'),
    search: '    if switchyard._shape_structure(existing_canonical) is distinct from ' +
      'switchyard._shape_structure(canonical) then\n',
    replace: '    if existing_canonical is distinct from canonical then\n',
    tests: ['tests/dsl/flow_options_test.ts'],
  },
  {
    name: 'older-core-accepted',
    bug: 'a runtime starts against an SQL core older than it needs instead of refusing',
    file: 'lib/worker/worker.ts',
    search: '    if (coreProblem) throw new WorkerConfigError(coreProblem);\n',
    replace: '',
    tests: ['tests/e2e/older_core_test.ts'],
  },
  {
    name: 'scaffold-rewrites-registration',
    bug: 'scaffold-queue --force rewrites a registration migration a database may have applied',
    file: 'cli/scaffold_queue.ts',
    search: '  if (mine.length > 0) {\n',
    replace: '  if (mine.length > 0 && mine.some(() => false)) {\n',
    tests: ['tests/unit/cli/scaffold_test.ts'],
  },
  // --- progress and following a run (issue 26) ------------------------------------------------
  {
    name: 'progress-without-owner',
    bug: "a progress event does not carry its run's owner, so row-level security hides it",
    ...fn('completion', 'report_progress'),
    search: "  values (run.run_id, run.owner, task.flow_slug, task.step_slug, 'progress',",
    replace: "  values (run.run_id, null, task.flow_slug, task.step_slug, 'progress',",
    tests: ['tests/sql/progress_test.ts'],
  },
  {
    name: 'follow-run-delivers-repeats',
    bug: 'followRun delivers an event at or below its cursor again after a resume',
    file: 'lib/browser.js',
    search: '    if (stopped || !(e.eventId > cursor)) return false;\n',
    replace: '    if (stopped) return false;\n',
    tests: ['tests/ops/follow_run_browser_test.ts', 'tests/ops/follow_run_realtime_test.ts'],
  },
  {
    name: 'follow-run-realtime-skips-backlog',
    bug:
      "followRun's Realtime transport delivers only what the subscription sends, not the backlog",
    file: 'lib/browser.js',
    search: '          for (const row of data ?? []) if (deliver(fromRow(row))) return;\n',
    replace: '',
    tests: ['tests/ops/follow_run_realtime_test.ts'],
  },
  {
    name: 'dashboard-server-buffers-streams',
    bug: "the dashboard command's server sends a run's event stream only when it ends",
    file: 'cli/_http_server.ts',
    search: "startsWith('text/event-stream') && response.body",
    replace: "startsWith('text/event-stream; never') && response.body",
    tests: ['tests/ops/follow_run_browser_test.ts'],
  },
  // --- one run's bad value is that run's problem (issue 36) -----------------------------------
  {
    name: 'begin-wait-misses-offset-errors',
    bug: "a sleep-until time whose offset PostgreSQL refuses (22009) escapes _begin_wait's check",
    ...fn('waits', '_begin_wait'),
    search: '      exception when data_exception then',
    replace: '      exception when invalid_datetime_format or datetime_field_overflow then',
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'expire-waits-one-run-stops-the-tick',
    bug: "an error in one run's ending wait is raised out of expire_waits (every timer stops)",
    ...fn('waits', 'expire_waits'),
    search:
      `      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        if switchyard._fail_run_unforeseen(
             due.run_id,`,
    replace: `      raise;
      begin
        if switchyard._fail_run_unforeseen(
             due.run_id,`,
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'expire-waits-one-delayed-start-stops-the-tick',
    bug: "an error in one run's delayed start is raised out of expire_waits",
    ...fn('waits', 'expire_waits'),
    search: `        if switchyard._fail_run_unforeseen(delayed.run_id,`,
    replace: `        raise exception 'mutant';
        if switchyard._fail_run_unforeseen(delayed.run_id,`,
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'overdue-run-stops-every-deadline',
    bug: 'an error cancelling one overdue run is raised out of cancel_overdue_runs',
    ...fn('runs', 'cancel_overdue_runs'),
    search:
      `      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;`,
    replace: `      raise;`,
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'one-schedule-stops-the-scheduler',
    bug: 'an error in one schedule is raised out of run_schedules (every schedule stops)',
    ...fn('schedules', 'run_schedules'),
    search:
      `      raise warning 'switchyard.run_schedules: schedule %: % (SQLSTATE %); looked at again next tick',`,
    replace: `      raise;
      raise warning 'switchyard.run_schedules: schedule %: % (SQLSTATE %); looked at again next tick',`,
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'successor-failure-fails-the-completion',
    bug:
      "an error starting a completed step's successors fails the completion (the handler runs again)",
    ...fn('completion', 'complete_tasks'),
    search: `        foreach next_run in array advancing loop
          begin`,
    replace: `        raise;
        foreach next_run in array advancing loop
          begin`,
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  {
    name: 'retry-run-strands-ended-child',
    bug: 'retry_run leaves a flow step whose child ended while the parent was failed started',
    ...fn('runs', 'retry_run'),
    search: '    perform switchyard._begin_child(run.run_id, step.flow_slug, step.step_slug);',
    replace: '    null;',
    tests: ['tests/sql/tick_isolation_test.ts'],
  },
  // --- issue 36: attempts bounded across instances -------------------------------------------
  {
    name: 'refund-without-bound',
    bug: 'release_tasks refunds a handed-back task however often it was refunded before',
    ...fn('completion', 'release_tasks'),
    search: ' and t.refunds < max_refunds\n',
    replace: '\n',
    tests: ['tests/worker/checkpoint_test.ts'],
  },
  {
    name: 'refund-every-hand-over',
    bug: 'release_tasks refunds a hung handler with no checkpoint, as if it handed its work back',
    ...fn('completion', 'release_tasks'),
    search: '    if (t.named or t.checkpointed) and',
    replace: '    if true and',
    tests: ['tests/worker/checkpoint_test.ts'],
  },
  // --- issue 36: the run event stream ends, and reads only what its reader takes -------------
  {
    name: 'run-event-stream-stays-open-after-end',
    bug: "the run event stream stays open after the run's own completed/failed/cancelled event",
    file: 'lib/platform/run_event_stream.ts',
    search: '              if (lastEnds && page.length < PAGE) return end();\n',
    replace: '',
    tests: ['tests/ops/run_event_stream_test.ts'],
  },
  {
    name: 'run-event-stream-reads-ahead',
    bug: "the run event stream reads the run's whole history whether or not its reader reads",
    file: 'lib/platform/run_event_stream.ts',
    search: '              if (page.length > 0) return;\n',
    replace: '              if (page.length > 0) continue;\n',
    tests: ['tests/ops/run_event_stream_test.ts'],
  },
  {
    name: 'dashboard-server-ignores-backpressure',
    bug: "the dashboard command's server buffers a stream for a client that does not read",
    file: 'cli/_http_server.ts',
    search: '        if (!res.write(value)) await drained(res);\n',
    replace: '        res.write(value);\n',
    tests: ['tests/ops/run_event_stream_test.ts'],
  },
  {
    name: 'signal-user-run-skips-payload-schema',
    bug: "signal_user_run delivers a browser's payload whatever its step's payload_schema says",
    ...fn('waits', 'signal_user_run'),
    search:
      "    problem := switchyard._payload_problem(coalesce(payload, 'null'), schema, 'payload');\n",
    replace: '    problem := null;\n',
    tests: ['tests/sql/run_events_rls_test.ts'],
  },
  {
    name: 'metrics-count-failed-tasks',
    bug: "a failed attempt is recorded only on a task's first failure: metrics count failed tasks",
    ...fn('completion', '_record_failed_attempt'),
    search: '  insert into switchyard.failed_attempts\n',
    replace: '  if old.last_failed_at is not null then return null; end if;\n' +
      '  insert into switchyard.failed_attempts\n',
    tests: ['tests/ops/metrics_test.ts'],
  },
  // --- issue 37: the registry is the truth on every database ---------------------------------
  {
    name: 'declared-alias-moves-only-new',
    bug: 'declare_alias activates a new alias only, as the where-not-exists migrations did: a ' +
      'fresh database replays to the first version',
    ...fn('flows', 'declare_alias'),
    search:
      `  perform switchyard._record_activation(alias_name, target, current_target, 'migration');
  return 'activated';`,
    replace: `  return 'unchanged';`,
    tests: ['tests/e2e/project_history_test.ts', 'tests/sql/declared_aliases_test.ts'],
  },
  {
    name: 'declared-alias-keeps-drained-retired-target',
    bug:
      'an alias on a version the registry retired is held back even when that version is drained',
    ...fn('flows', '_alias_move_blocker'),
    search: '    if open_runs > 0 then',
    replace: '    if open_runs >= 0 then',
    tests: ['tests/sql/declared_aliases_test.ts'],
  },
  {
    name: 'declared-alias-strands-open-runs',
    bug: 'declare_alias moves an alias away from a retired version that still has started runs',
    ...fn('flows', '_alias_move_blocker'),
    search: '    if open_runs > 0 then',
    replace: '    if open_runs < 0 then',
    tests: ['tests/e2e/project_history_test.ts', 'tests/sql/declared_aliases_test.ts'],
  },
  {
    name: 'declared-alias-hands-live-workers-new-version',
    bug: 'declare_alias moves an alias at push while live workers lack the new target',
    ...fn('flows', '_alias_move_blocker'),
    search: '  if hurt is not null then',
    replace: '  if false then',
    tests: ['tests/e2e/project_history_test.ts', 'tests/sql/declared_aliases_test.ts'],
  },
  {
    name: 'compile-takes-shape-change-for-options',
    bug: 'compile calls any changed shape a runtime-option change and writes it, to fail at push',
    file: 'cli/_shape_change.ts',
    search: '  if (same(sa, sb)) return {',
    replace: '  if (true) return {',
    tests: ['tests/e2e/compile_refusal_test.ts'],
  },
  // --- issue 37: a user's project from laptop to production ------------------------------------
  {
    name: 'run-events-same-origin-only',
    bug: "the run event stream answers no CORS: a page of the user's own site cannot follow a run",
    file: 'lib/platform/run_event_stream.ts',
    search: "? (options.open ? null : '*')",
    replace: '? null',
    tests: ['tests/e2e/readme_follow_test.ts'],
  },
  {
    name: 'serve-ignores-plain-deno-serve',
    bug:
      "serve gives a function of one's own no address: its `Deno.serve(handler)` listens on 8000",
    file: 'cli/serve.ts',
    search: '        DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}`,\n',
    replace: '',
    tests: ['tests/e2e/readme_follow_test.ts'],
  },
  {
    name: 'serve-watch-leaves-workers-down',
    bug: 'serve --watch restarts the functions but never starts their workers again',
    file: 'cli/serve.ts',
    search: '      const bearer = starts.get(fn.name);',
    replace: '      const bearer = undefined as Record<string, string> | undefined;',
    tests: ['tests/e2e/serve_local_loop_test.ts'],
  },
  {
    name: 'serve-port-moves',
    bug: "serve ignores the port the project's last serve used and takes a new one",
    file: 'cli/_serve_port.ts',
    search: '    port = remembered;',
    replace: '    port = freePort();',
    tests: ['tests/e2e/serve_local_loop_test.ts'],
  },
  {
    name: 'serve-pause-unexplained',
    bug: "serve prints a served function's pause without what to run",
    file: 'cli/_serve_pauses.ts',
    search: '      options.log(pauseAdvice(name, options.watching));\n',
    replace: '',
    tests: ['tests/e2e/serve_local_loop_test.ts'],
  },
  // --- issue 37: refusals are seen, doctor ----------------------------------------------------
  {
    name: 'refusal-never-recorded',
    bug: 'a refused start or an unsupported-work pause is logged but never reaches the database',
    file: 'lib/worker/refusal.ts',
    search: '      new WorkerQueries(sql).recordRefusal(functionName, refusal, text),',
    replace: '      Promise.resolve(),',
    tests: ['tests/worker/refusals_test.ts'],
  },
  {
    name: 'refusal-repeat-not-counted',
    bug: 'record_refusal keeps the latest message of a repeated refusal but not how often',
    ...fn('workers', 'record_refusal'),
    search: 'last_at = switchyard.clock_now(), count = r.count + 1;',
    replace: 'last_at = switchyard.clock_now(), count = 1;',
    tests: ['tests/sql/refusals_test.ts'],
  },
  {
    name: 'doctor-lists-resolved-refusals',
    bug: 'doctor lists a refusal that a later worker start of the function resolved',
    file: 'cli/doctor.ts',
    search: '    if (f?.lastStartedAt && f.lastStartedAt >= r.lastAt) continue;\n',
    replace: '',
    tests: ['tests/e2e/doctor_test.ts'],
  },
  // --- issue 38: the changelog held to the release records ------------------------------------
  {
    name: 'changelog-ignores-raised-version',
    bug: 'a kit version raised past the records does not have to be the newest changelog section',
    file: 'tools/_changelog.ts',
    search:
      "    if (recorded.has(version) || (name !== 'KIT_VERSION' && version === facts.kitVersion)) " +
      'continue;',
    replace: '    continue;',
    tests: ['tests/unit/changelog_test.ts'],
  },
  {
    name: 'changelog-accepts-any-date',
    bug: "a recorded release's section may carry any date, not its commit's",
    file: 'tools/_changelog.ts',
    search: '    } else if (release.date !== null && section.date !== release.date) {',
    replace: "    } else if (release.date !== null && section.date === '') {",
    tests: ['tests/unit/changelog_test.ts'],
  },
  // --- issue 38: the Node entries of the npm package ------------------------------------------
  {
    name: 'node-build-keeps-ts-specifiers',
    bug: 'the Node build leaves relative imports on .ts, which Node cannot load from the package',
    file: 'tools/_npm_node.ts',
    search: "return `${specifier.slice(0, -'.ts'.length)}.js`;",
    replace: 'return specifier;',
    tests: ['tests/unit/tools/npm_node_test.ts', 'tests/e2e/node_client_test.ts'],
  },
  {
    name: 'node-client-ignores-process-env',
    bug: 'under Node the client never reads DATABASE_URL (process.env) and finds no database',
    file: 'lib/sql/connection.ts',
    search: '  return runtime.process?.env[name];',
    replace: '  return undefined;',
    tests: ['tests/e2e/node_client_test.ts'],
  },
  // --- issue 38: commands find the project and print what the user types ----------------------
  {
    name: 'invocation-stale-init-cwd',
    bug: 'the user is taken to stand in INIT_CWD wherever the command runs, so an INIT_CWD an ' +
      'outer tool left overrides the directory npx switchyard runs in',
    file: 'cli/_invocation.ts',
    search: '  if (!isCompiled() && resolve(cwd) === resolve(KIT_ROOT)) {',
    replace: '  if (!isCompiled()) {',
    tests: ['tests/e2e/invocation_test.ts'],
  },
  {
    name: 'invocation-project-flag-always',
    bug: 'npx switchyard prints --project even where the project is found without it',
    file: 'cli/_invocation.ts',
    search: "  if (mode !== 'checkout') return nearestProject(p.from) === p.dir ? null : " +
      '(p.explicit ?? p.dir);',
    replace: "  if (mode !== 'checkout') return p.explicit ?? p.dir;",
    tests: ['tests/e2e/invocation_test.ts'],
  },
  // --- issue 40: test tiers --------------------------------------------------------------------
  {
    name: 'tiers-unclassified-passes',
    bug: 'a test file in no tier goes unnoticed, so a --tier run in CI never runs it',
    file: 'tools/_tiers.ts',
    search: '    if (list.length === 0) {\n',
    replace: '    if (list.length < 0) {\n',
    tests: ['tests/unit/tiers_test.ts'],
  },
  {
    name: 'tiers-browser-outside-e2e',
    bug: 'a browser test declared in the db tier is accepted, and runs once per kind of PGMQ',
    file: 'tools/_tiers.ts',
    search: "  if (tier !== 'e2e' && imports(",
    replace: "  if (tier === 'unit' && imports(",
    tests: ['tests/unit/tiers_test.ts'],
  },
  // --- issue 39: the test engine and its clock -------------------------------------------------
  {
    name: 'test-clock-leaves-pgmq-behind',
    bug: "advancing a test engine's clock does not move the vt of the kit's queues: a backoff " +
      'or a delayed message never ends on the virtual clock',
    file: 'lib/sql/testing_queries.ts',
    search: "        'update pgmq.%I set vt = vt - $1, enqueued_at = enqueued_at - $1,\n" +
      '                message = case',
    replace: "        'update pgmq.%I set vt = vt, enqueued_at = enqueued_at - $1,\n" +
      '                message = case',
    tests: ['tests/testing/clock_sql_test.ts', 'tests/testing/engine_test.ts'],
  },
  {
    name: 'replay-runs-current-handlers',
    bug: 'a replay runs the current handlers instead of answering from the record',
    file: 'lib/testing/engine.ts',
    search: 'const recorded = replay !== undefined && !replay.live.has(step.slug);',
    replace: 'const recorded = false && replay !== undefined;',
    tests: ['tests/testing/replay_test.ts'],
  },
];
