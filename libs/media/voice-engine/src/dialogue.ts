import { AgentSettings, LanguageSettings } from './agent-settings';
import { offeredTools, OfferedTool } from './tools';

/**
 * What the agent's next reply is made of: its instructions and the tools it may call. The engine asks before each
 * reply, so turn-taking never depends on where they come from: the agent's one prompt, or the current node of a
 * conversation flow (FlowRuntime).
 */
export interface Dialogue {
  /** The system prompt of the next reply in `language`, variables not yet filled; empty: none. */
  instructions(language: LanguageSettings): string;
  /** The tools the next reply may call. */
  tools(): OfferedTool[];
  /** The one tool the next model request must call, if any (a flow node's `tool` until it has run). */
  toolChoice?(): { name: string } | undefined;
  /** A tool of the reply ran (whatever its outcome). */
  toolRan?(name: string): void;
  /** The knowledge bases the reply is grounded in when they differ from the agent's (a flow node's); [] none. */
  knowledgeBases?(): string[] | undefined;
}

/** The agent's own prompt (per language) and tool set, the same for every turn. */
export class AgentDialogue implements Dialogue {
  private readonly toolset: OfferedTool[];

  constructor(settings: AgentSettings) {
    this.toolset = settings.mode === 'conversation' ? offeredTools(settings.tools) : [];
  }

  instructions(language: LanguageSettings): string {
    return language.systemPrompt;
  }

  tools(): OfferedTool[] {
    return this.toolset;
  }
}
