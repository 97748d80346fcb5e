import { Column, Entity, PrimaryColumn } from 'typeorm';
import { AgentSpec, GroupSpec } from './spec/agent-spec';

@Entity({ name: 'agents' })
export class AgentEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  /** Copy of spec.name, for ordering and search without opening the document. */
  @Column({ type: 'text' })
  name: string;

  /** The agent document (public fields; credentials sealed). */
  @Column({ type: 'jsonb' })
  spec: AgentSpec;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId: string | null;

  /** The project (prj_…) the agent belongs to, fixed at creation; null on agents stored before projects (the default). */
  @Column({ name: 'project_id', type: 'text', nullable: true })
  projectId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', precision: 3, nullable: true })
  deletedAt: Date | null;
}

@Entity({ name: 'agent_groups' })
export class AgentGroupEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'jsonb' })
  spec: GroupSpec;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
