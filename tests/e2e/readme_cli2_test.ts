/**
 * The README's sections run as written in a project made by Supabase CLI 2's `supabase init`:
 * by hand and with the example (tests/e2e/_readme.ts holds the test).
 */
import { defineReadmeTests } from './_readme.ts';

defineReadmeTests('CLI 2');
