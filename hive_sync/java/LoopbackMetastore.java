// Hive's metastore server as HiveMetaStore.startMetaStore sets it up, but bound
// to 127.0.0.1: the Hive 2.3 in PySpark's jars binds every interface and has no
// bind-host setting. Run by `java -cp <spark jars>/* LoopbackMetastore.java PORT
// [--hiveconf KEY=VALUE]...` (a single-file source program, no build step).
import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

public class LoopbackMetastore {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].equals("--hiveconf")) {
                throw new IllegalArgumentException("expected --hiveconf KEY=VALUE, got " + args[i]);
            }
            String[] pair = args[i + 1].split("=", 2);
            conf.set(pair[0], pair[1]);
        }
        HiveMetaStore.HMSHandler base = new HiveMetaStore.HMSHandler("loopback metastore", conf, false);
        IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf);
        TServerSocket socket = new TServerSocket(new InetSocketAddress("127.0.0.1", port));
        long limit = conf.getLongVar(HiveConf.ConfVars.METASTORESERVERMAXMESSAGESIZE);
        TThreadPoolServer.Args server = new TThreadPoolServer.Args(socket)
            .processor(new TSetIpAddressProcessor<IHMSHandler>(handler))
            .transportFactory(new TTransportFactory())
            .protocolFactory(new TBinaryProtocol.Factory())
            .inputProtocolFactory(new TBinaryProtocol.Factory(true, true, limit, limit))
            .minWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMINTHREADS))
            .maxWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMAXTHREADS));
        System.out.println("metastore listening on 127.0.0.1:" + port);
        new TThreadPoolServer(server).serve();
    }
}
