import {
  AgentFields,
  ApiKeyHint,
  ApiKeyInput,
  type Capabilities,
  type Flow,
  GroupDefaults,
  INHERITABLE_FIELDS,
  type InheritableField,
  ToolCalendar,
  ToolConfigOf,
  ToolRequest,
} from '@parley/contracts';
import { SealedSecret } from '@parley/persistence';

/**
 * The agent document as stored: the contract's agent fields, with the tool credentials sealed in place. The
 * gateway validates the shape of what clients send; this service owns the rules that need the whole document or
 * the deployment.
 */
export { INHERITABLE_FIELDS, type Capabilities, type Flow, type InheritableField };

/**
 * A tool config in any of the forms it passes through here: written (credentials in the clear), stored (sealed),
 * presented (a hint and header names) or opened for the media worker.
 */
export type ToolConfig = ToolConfigOf<
  ToolCalendar & { api_key?: ApiKeyInput | SealedSecret | ApiKeyHint },
  ToolRequest & {
    /** Written only; stored sealed under `secret_headers`. */
    secret_header_values?: Record<string, string>;
    secret_headers?: Record<string, string>;
    secret_header_names?: string[];
  }
>;

export interface AgentSpec extends AgentFields<ToolConfig> {
  /** Storage format version; 2 is the first with the current meaning of `autonomy: simple`. */
  spec_version?: number;
}

export type { SealedSecret };

export const SPEC_VERSION = 2;

export interface GroupSpec {
  name: string;
  description?: string;
  color?: string;
  defaults?: GroupDefaults;
  metadata?: Record<string, string>;
}
