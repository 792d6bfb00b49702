-- Declared aliases (issue 37, docs/ARCHITECTURE.md §6): what the project's registry declares for
-- each alias, as switchyard.declare_alias records it from a compiled migration.
create table switchyard.alias_declarations (
  alias text primary key,
  versions text[] not null check (cardinality(versions) > 0),
  declared_at timestamptz not null default now()
);
