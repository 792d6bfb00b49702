/**
 * The test tiers, file by file (docs/design/testing.md#test-tiers). `deno task test` runs every
 * file;
 * `deno task test --tier unit|db|e2e [paths…]` runs one tier (tools/test.ts), and `.ci/run`
 * runs unit, then db once per PGMQ kind side by side, then e2e once on the extension.
 *
 * A new test file goes in exactly one list: tests/unit/tiers_test.ts (and every `--tier` run)
 * fails, naming it, while a file under tests/ is in none or in two. A tier's files start in the
 * order listed (`deno test --parallel` keeps it): db and e2e list theirs slowest first, by the
 * durations CI prints, so that a run does not end waiting on a long file started last; a new file
 * goes where its duration puts it.
 *
 * - **unit**: no database, no network, no server (it runs without the test database's variables
 *   and with the network denied); the only processes it may start are the deno binary itself for
 *   a tool's answer (deno info, deno fmt, deno eval) and git reading the kit's history. Exactly the
 *   files under tests/unit/.
 * - **db**: a database, in process: the file clones the migrated template
 *   (tests/_helpers/db.ts) and drives the kit through its API; one case may start a worker or an
 *   operator command as a process (a killed worker, a command's output). CI runs the whole tier on
 *   the compatible layer, and the files of {@linkcode PGMQ_DEPENDENT} on the extension too.
 * - **e2e**: what a user runs, end to end: the commands, projects made by the Supabase CLI, the
 *   README, the npm package, browsers, upgrades from every release, chaos, the demo, serve. Once
 *   in CI, on the PGMQ extension (as on Supabase).
 *
 * @module
 */
import type { Tier } from '../tools/_tiers.ts';

/** Every test file under tests/, by tier; db and e2e slowest first (the order runs start them). */
export const TIERS: Readonly<Record<Tier, readonly string[]>> = {
  unit: [
    'tests/unit/api_test.ts',
    'tests/unit/architecture_test.ts',
    'tests/unit/bench/history_noise_test.ts',
    'tests/unit/changelog_test.ts',
    'tests/unit/cli/env_file_test.ts',
    'tests/unit/cli/migration_timestamps_test.ts',
    'tests/unit/cli/scaffold_test.ts',
    'tests/unit/cli/scaffold_webhook_test.ts',
    'tests/unit/cli/supabase_cli_test.ts',
    'tests/unit/docs_examples_test.ts',
    'tests/unit/docs_links_test.ts',
    'tests/unit/dsl/dsl_test.ts',
    'tests/unit/dsl/queue_names_test.ts',
    'tests/unit/dsl/types_test.ts',
    'tests/unit/dsl/wait_types_test.ts',
    'tests/unit/ops/dashboard_page_test.ts',
    'tests/unit/platform/webhook_verify_test.ts',
    'tests/unit/process_helper_test.ts',
    'tests/unit/sql/client_types_test.ts',
    'tests/unit/sql/clock_test.ts',
    'tests/unit/sql/core_build_test.ts',
    'tests/unit/sql/deno_executable_test.ts',
    'tests/unit/sql/ended_socket_test.ts',
    'tests/unit/tiers_test.ts',
    'tests/unit/troubleshooting_test.ts',
    'tests/unit/tools/api_html_test.ts',
    'tests/unit/tools/bench_table_test.ts',
    'tests/unit/tools/npm_node_test.ts',
    'tests/unit/tools/release_test.ts',
    'tests/unit/tools/tasks_test.ts',
    'tests/unit/worker/worker_types_test.ts',
  ],
  db: [
    'tests/ops/operations_test.ts',
    'tests/sql/prune_test.ts',
    // Early, though quick: its turns at the pg_cron database come before operations_test's real
    // pg_cron job holds it for up to a minute (withCronDatabase, tests/_helpers/db.ts).
    'tests/sql/cron_database_test.ts',
    'tests/sql/hostile_test.ts',
    'tests/sql/row_triggers_test.ts',
    'tests/sql/row_trigger_backfill_test.ts',
    'tests/sql/batching_test.ts',
    'tests/sql/run_origin_test.ts',
    'tests/worker/flow_control_test.ts',
    'tests/worker/races_test.ts',
    'tests/worker/engine_test.ts',
    'tests/worker/checkpoint_test.ts',
    'tests/worker/shared_queues_test.ts',
    'tests/sql/client_test.ts',
    'tests/sql/run_controls_test.ts',
    'tests/testing/clock_rules_test.ts',
    'tests/testing/replay_test.ts',
    'tests/testing/engine_test.ts',
    'tests/testing/snapshot_cache_test.ts',
    'tests/testing/clock_sql_test.ts',
    'tests/testing/flow_control_test.ts',
    'tests/testing/mock_types_test.ts',
    'tests/dsl/map_test.ts',
    'tests/sql/sql_core_test.ts',
    'tests/dsl/wait_steps_test.ts',
    'tests/platform/edge_worker_test.ts',
    'tests/platform/webhook_test.ts',
    'tests/sql/run_events_rls_test.ts',
    'tests/sql/source_test.ts',
    'tests/sql/priority_test.ts',
    'tests/dsl/conditions_test.ts',
    'tests/dsl/context_test.ts',
    'tests/sql/tick_isolation_test.ts',
    'tests/sql/declared_aliases_test.ts',
    'tests/worker/cancellation_test.ts',
    'tests/sql/limits_test.ts',
    'tests/platform/edge_auth_test.ts',
    'tests/sql/deadlines_test.ts',
    'tests/sql/pgmq_contract_test.ts',
    'tests/sql/hardening_test.ts',
    'tests/sql/schedules_test.ts',
    'tests/sql/progress_test.ts',
    'tests/ops/follow_run_realtime_test.ts',
    'tests/ops/dashboard_api_test.ts',
    'tests/sql/start_keys_test.ts',
    'tests/worker/refusals_test.ts',
    'tests/dsl/flow_options_test.ts',
    'tests/ops/run_event_stream_test.ts',
    'tests/dsl/child_cancel_race_test.ts',
    'tests/sql/client_consistency_test.ts',
    'tests/worker/development_test.ts',
    'tests/sql/ended_runs_test.ts',
    'tests/sql/connection_test.ts',
    'tests/sql/flow_events_option_test.ts',
    'tests/dsl/child_flows_test.ts',
    'tests/sql/schedules_flow_control_hardening_test.ts',
    'tests/worker/tracing_test.ts',
    'tests/ops/metric_counters_test.ts',
    'tests/ops/metric_samples_test.ts',
    'tests/ops/grafana_dashboard_test.ts',
    'tests/ops/metrics_test.ts',
    'tests/sql/refusals_test.ts',
    'tests/sql/queue_churn_test.ts',
    'tests/sql/idempotent_start_test.ts',
    'tests/sql/list_schedules_test.ts',
    'tests/sql/successors_test.ts',
    'tests/ops/dashboard_signal_test.ts',
    'tests/sql/sql_errors_test.ts',
    'tests/sql/plpgsql_check_test.ts',
  ],
  e2e: [
    'tests/e2e/upgrade_1_test.ts',
    'tests/e2e/upgrade_2_test.ts',
    'tests/e2e/upgrade_load_test.ts',
    'tests/e2e/readme_cli2_test.ts',
    'tests/e2e/readme_cli3_test.ts',
    'tests/e2e/harness_test.ts',
    'tests/ops/dashboard_hardening_test.ts', // `deno task dashboard` served in a child process, over raw HTTP
    'tests/ops/prometheus_scrape_test.ts', // Debian's prometheus scraping /metrics, and promtool
    'tests/e2e/project_history_test.ts',
    'tests/ops/dashboard_browser_test.ts', // the dashboard in Chromium
    'tests/e2e/demo_test.ts',
    'tests/worker/chaos_test.ts', // worker processes killed at random on a cluster of its own
    'tests/e2e/node_client_test.ts',
    'tests/e2e/serve_local_loop_test.ts',
    'tests/e2e/invocation_test.ts',
    'tests/e2e/tasks_cli_test.ts',
    'tests/e2e/compile_test.ts',
    'tests/e2e/readme_follow_test.ts',
    'tests/e2e/cli_test.ts',
    'tests/ops/follow_run_browser_test.ts', // lib/browser.ts in Chromium
    'tests/ops/run_controls_browser_test.ts', // the run controls in Chromium
    'tests/e2e/kit_e2e_test.ts',
    'tests/e2e/install_test.ts',
    'tests/e2e/compile_refusal_test.ts',
    'tests/e2e/keep_alive_test.ts',
    'tests/ops/dashboard_charts_browser_test.ts', // the charts in Chromium
    'tests/e2e/doctor_test.ts',
    'tests/e2e/config_toml_test.ts',
    'tests/e2e/process_tree_test.ts',
    'tests/e2e/webhook_serve_test.ts', // a scaffolded webhook served by serve, over real HTTP
    'tests/e2e/serve_test.ts',
    'tests/e2e/older_core_test.ts',
  ],
};

/**
 * The db files CI also runs on the PGMQ extension (`deno task test --tier db --pgmq-dependent`),
 * beside the whole db tier on the compatible layer: every db file that opens a server database
 * and names the kit's PGMQ setup (`ensurePgmq`, `pgmqProvider`, `pgmqModeFromEnv`, `PGMQ_MODE`)
 * or PGMQ's queue management (`pgmq.create…`, `pgmq.drop_queue`, `pgmq.purge_queue`);
 * tests/unit/tiers_test.ts fails on such a file missing here. CI's two kinds are the same layer,
 * loaded as plain SQL or packaged as the extension (docs/design/testing.md#both-kinds-of-pgmq):
 * only how PGMQ is provided and what becomes of its own objects can differ, so a file that only
 * sends, reads, archives or counts messages would run the same statements twice. Among these are
 * the PGMQ contract, the kit's PGMQ setup and its refusals, queue creation and churn (create,
 * drop), shared queues and the SQL core's queue provisioning. `SWITCHYARD_CI_FULL=1 .ci/run` runs
 * the whole db tier on both. Listed in the db tier's order.
 */
export const PGMQ_DEPENDENT: readonly string[] = [
  'tests/worker/shared_queues_test.ts',
  'tests/sql/sql_core_test.ts',
  'tests/sql/source_test.ts',
  'tests/sql/limits_test.ts',
  'tests/sql/pgmq_contract_test.ts',
  'tests/sql/hardening_test.ts',
  'tests/sql/queue_churn_test.ts',
  'tests/sql/sql_errors_test.ts',
];
