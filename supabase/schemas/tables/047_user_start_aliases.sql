-- Aliases a signed-in user may start through start_user_run. Empty: nobody may, until an
-- operator inserts an alias (the opt-in of docs/design/client.md).
create table switchyard.user_start_aliases (
  alias text primary key,
  added_at timestamptz not null default switchyard.clock_now()
);
