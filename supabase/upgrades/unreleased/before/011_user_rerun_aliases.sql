-- The opt-in of signed-in users' reruns (issue 41, docs/design/rerun.md), as
-- supabase/schemas/tables/052_user_rerun_aliases.sql has it: empty, so nobody may until an
-- operator inserts an alias. A new table: nothing is rewritten. Its default is now() here (the
-- clock does not exist yet before the functions); after/011_user_rerun_aliases_clock.sql sets
-- switchyard.clock_now(), as the table declares it.
create table switchyard.user_rerun_aliases (
  alias text primary key,
  added_at timestamptz not null default now()
);
