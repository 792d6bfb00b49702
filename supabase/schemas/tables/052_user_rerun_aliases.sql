-- Aliases whose runs a signed-in user may rerun through rerun_user_run, only the runs they own
-- (docs/design/rerun.md). Empty: nobody may, until an operator inserts an alias (the
-- opt-in of docs/design/client.md, as user_start_aliases is for starts).
create table switchyard.user_rerun_aliases (
  alias text primary key,
  added_at timestamptz not null default switchyard.clock_now()
);
