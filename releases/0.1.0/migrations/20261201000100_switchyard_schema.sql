-- Switchyard SQL core, part 1: the schema and PGMQ.
--
-- On Supabase the real PGMQ extension is created here. Local runs and tests
-- pre-load a PGMQ-compatible layer (pgmq_compat/pgmq.sql, never deployed), so
-- the extension is only created when the pgmq schema does not exist yet.
do $$
begin
  if not exists (select 1 from pg_namespace where nspname = 'pgmq') then
    create extension if not exists pgmq;
  end if;
end
$$;

create schema if not exists switchyard;

-- Nothing in switchyard is reachable from PostgREST's anon/authenticated roles;
-- functions are executable by PUBLIC by default, so take that away as well.
revoke all on schema switchyard from public;
alter default privileges in schema switchyard revoke execute on functions from public;
