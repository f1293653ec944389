import { heapStateBackend } from 'weir';
import { describeKeyedStateBackend } from './keyedState.conformance';

describeKeyedStateBackend('heap', () => heapStateBackend());
