import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'endpoints' })
export class EndpointEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ name: 'account_id', type: 'text' }) accountId: string;
  @Column({ type: 'text' }) url: string;
  @Column({ type: 'jsonb' }) events: string[];
  @Column({ type: 'text' }) description: string;
  @Column({ type: 'boolean' }) enabled: boolean;
  @Column({ type: 'jsonb' }) metadata: Record<string, string>;
  @Column({ name: 'disabled_reason', type: 'text', nullable: true }) disabledReason: string | null;
  @Column({ name: 'consecutive_failures', type: 'int' }) consecutiveFailures: number;
  /** Set on the endpoint made for an agent's `webhook_url`: it receives only that agent's events. */
  @Column({ name: 'owner_agent_id', type: 'text', nullable: true }) ownerAgentId: string | null;
  /** The project (prj_…); null on endpoints stored before projects, and on an agent's own: the default project. */
  @Column({ name: 'project_id', type: 'text', nullable: true }) projectId: string | null;
  /** Deleted endpoints stay as rows (their history stays readable) and are invisible everywhere else. */
  @Column({ name: 'deleted_at', type: 'timestamptz', precision: 3, nullable: true }) deletedAt: Date | null;
  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 }) updatedAt: Date;
}
