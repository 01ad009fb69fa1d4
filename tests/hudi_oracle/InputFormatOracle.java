// Apache Hudi's Hive input format as the oracle for `hive list-status`: for each
// job configuration file given (Java properties), builds a JobConf from it and
// prints what HoodieParquetInputFormat.listStatus(JobConf) returns, one
// "path<TAB>length" line per file, after a "== <conf file>" header; a failure
// prints "!! <exception class>: <message>" instead. One JVM serves many configurations.
// Run by `java -cp <Hudi's Spark bundle>:<Spark 3.5 jars>/* InputFormatOracle.java CONF...`
// (a single-file source program, no build step). The Spark bundle holds
// hudi-hadoop-mr's classes (Maven Central does not serve hudi-hadoop-mr-bundle here).
import java.io.FileReader;
import java.io.Reader;
import java.util.Properties;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hudi.hadoop.HoodieParquetInputFormat;

public class InputFormatOracle {
    public static void main(String[] args) throws Exception {
        for (String confFile : args) {
            System.out.println("== " + confFile);
            Properties properties = new Properties();
            try (Reader reader = new FileReader(confFile)) {
                properties.load(reader);
            }
            JobConf job = new JobConf(false);
            job.set("fs.file.impl.disable.cache", "true");  // a table rewritten between configurations is read anew
            for (String key : properties.stringPropertyNames()) {
                job.set(key, properties.getProperty(key));
            }
            HoodieParquetInputFormat format = new HoodieParquetInputFormat();
            format.setConf(job);
            try {
                for (FileStatus status : format.listStatus(job)) {
                    System.out.println(status.getPath() + "\t" + status.getLen());
                }
            } catch (Exception e) {
                System.out.println("!! " + e.getClass().getName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            System.out.flush();
        }
    }
}
