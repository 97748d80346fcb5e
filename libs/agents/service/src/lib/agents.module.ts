import { Module } from '@nestjs/common';
import { AgentsGrpcController } from './agents.grpc-controller';
import { AgentsRepository } from './agents.repository';

@Module({
  controllers: [AgentsGrpcController],
  providers: [AgentsRepository],
})
export class AgentsModule {}
