-- Upgrades keep existing flows (docs/ARCHITECTURE.md §8.3):
--
-- 1. Shapes compare in their canonical form: every key at its value, a key a release did not
--    know at its default (0.1.0 runtimes send no step kind, conditions, whenUnmet or
--    whenExhausted; a 0.2.0 database holds such shapes). A new release never makes an existing
--    flow's shape differ.
-- 2. Runtime options (maxAttempts, baseDelay, maxDelay, timeout, startDelay) are not shape: a
--    change of options only is applied to the flow and its steps (tasks created afterwards use
--    it; tasks keep the options they were created with) and recorded in
--    switchyard.flow_option_changes. Structure (steps, order, dependencies, kinds, conditions,
--    whenUnmet, whenExhausted, queues, placement) stays strict: SY004.
-- 3. switchyard.core_version(): the release of the SQL core, which a runtime checks at start so
--    that a runtime deployed before its migrations refuses with "apply the migrations".
--
-- Safe under load: it creates one table and replaces functions; the only rows it writes are the
-- stored shapes of switchyard.flows (no lock a worker's claim or completion takes).

-- The release of this database's SQL core. A runtime refuses a database older than it needs.
create or replace function switchyard.core_version()
returns text
language sql
immutable
set search_path = ''
as $$
  select '0.4.0'::text
$$;
