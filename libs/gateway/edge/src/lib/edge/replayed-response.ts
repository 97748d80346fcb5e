/** A stored response sent again; ProblemFilter writes it out as it was, marked as a replay. */
export class ReplayedResponse {
  constructor(
    readonly status: number,
    /** The JSON text first sent. */
    readonly body: string,
  ) {}
}
