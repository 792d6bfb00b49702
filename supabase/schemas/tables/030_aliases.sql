-- Aliases: a stable name over one active concrete version (docs/design/versions.md).
create table switchyard.aliases (
  alias text primary key,
  flow_slug text not null references switchyard.flows,
  activated_at timestamptz not null default switchyard.clock_now()
);

create unique index aliases_ci on switchyard.aliases (lower(alias));

-- Which concrete versions a deployment declared under an alias (kept for drain status).
create table switchyard.alias_members (
  alias text not null,
  flow_slug text not null references switchyard.flows on delete cascade,
  added_at timestamptz not null default switchyard.clock_now(),
  primary key (alias, flow_slug)
);

create unique index alias_members_one_alias on switchyard.alias_members (flow_slug);

create table switchyard.alias_activations (
  activation_id bigint generated always as identity primary key,
  alias text not null,
  flow_slug text not null,
  previous_flow_slug text,
  activated_at timestamptz not null default switchyard.clock_now(),
  source text not null                     -- 'worker' (registry order), 'migration' (declare_alias)
                                           -- or 'operator'
);

-- What the project's registry declares for each alias, as its latest compiled migration states
-- it (switchyard.declare_alias; docs/design/versions.md, Declared aliases): the versions, oldest
-- first, the last one the target. One row per alias, replaced by each later declaration; the
-- alias itself moves to the target only when that strands no run and hurts no live worker.
create table switchyard.alias_declarations (
  alias text primary key,
  versions text[] not null check (cardinality(versions) > 0),
  declared_at timestamptz not null default switchyard.clock_now()
);
