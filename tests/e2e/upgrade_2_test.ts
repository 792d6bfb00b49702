/**
 * Upgrades to this kit from the recorded releases at odd positions (0.2.0, 0.4.0, …), each as a user
 * makes it; tests/e2e/_upgrade_from_release.ts holds the test. The two shards run side by side,
 * and every release is in exactly one of them.
 */
import { defineUpgradeTests } from './_upgrade_from_release.ts';

defineUpgradeTests(1, 2);
